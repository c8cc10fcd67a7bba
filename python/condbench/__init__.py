"""condbench's Python half (docs/design.md, docs/contributing.md's data flow): the PyTorch peer
(`peer`, its command; `rounds`, how it times; `peer_result`, the file it writes; `answer_budget`;
`decoder_peer`; and `workload`, what it reads of an exported model), the modules it times
(`families`, the built-in families' twins; `variants`, the ways a user writes the conditional;
`decoder`), what condbench deploys and the peer times too (`deployed`), a model file's module as
loaded (`model_source`) and its compile (`model_compile`; `model_file`, the command), the one
AOTInductor path (`inductor`: export, compile, check) and the built-in families' packages on it
(`aoti`), one-line errors (`errors`), the writer of benchmark names (`names`), the reader of result
files (`results`, which the scripts and the device check use too), the rules C++ owns, received as
data (`rules`: the exit test, tolerances and tie margins), and what the GPU check reads
(`device_check`). Run the tools as modules:
python -m condbench.peer, python -m condbench.model_file, python -m condbench.aoti,
python -m condbench.results."""
