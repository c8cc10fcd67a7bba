"""The early-exit view of a module: all that the ways of writing the conditional (condbench.variants),
the whole-model modules they deploy and the peer's checks use of a model, whoever made it: a
built-in family's twin (condbench.families) or the module of a model file (condbench.model_source).

    blocks, num_classes, row_shape   its depth, the logits' width, one input row's shape
    block(k, h)                      block k (0-based) on the state h
    head(k)                          exit head k+1 for k < blocks, else the final head
    final                            the final head
    confidence(logits)               the exit rule's score of each row: the largest softmax
                                     probability (condbench.rules, C++'s), unless the module has its own

The exit test itself, and the tolerances a result is checked with, are C++'s: condbench.rules and the
exported workload carry them; nothing here types one."""
from torch import nn

from .rules import max_softmax


class EarlyExitModel(nn.Module):
    """The view's interface; a family's twin defines blocks, num_classes, row_shape, block, head and
    final, and takes the default score."""

    blocks: int
    num_classes: int
    row_shape: tuple

    def block(self, k, h):
        raise NotImplementedError

    def head(self, k):
        raise NotImplementedError

    def confidence(self, logits):
        return max_softmax(logits)


class ModelFileView(EarlyExitModel):
    """A model file's module (stages, exits, final, and perhaps confidence(): docs/your-model.md) as
    the view: its stages are the blocks, its exits the heads."""

    def __init__(self, module, classes, row_shape, custom_confidence):
        super().__init__()
        self.module = module
        self.blocks, self.num_classes, self.row_shape = len(module.stages), classes, tuple(row_shape)
        self.custom_confidence = custom_confidence

    @property
    def final(self):
        return self.module.final

    def block(self, k, h):
        return self.module.stages[k](h)

    def head(self, k):
        return self.module.exits[k] if k < self.blocks else self.module.final

    def confidence(self, logits):
        return self.module.confidence(logits) if self.custom_confidence else super().confidence(logits)
