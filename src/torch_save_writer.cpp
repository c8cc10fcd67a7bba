#include "torch_save_writer.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "condbench/error.h"
#include "condbench/output_file.h"

namespace condbench::detail {

namespace {

const std::map<at::ScalarType, const char*>& storage_names() {
  static const std::map<at::ScalarType, const char*> names = {
      {at::kFloat, "FloatStorage"},       {at::kDouble, "DoubleStorage"}, {at::kHalf, "HalfStorage"},
      {at::kBFloat16, "BFloat16Storage"}, {at::kLong, "LongStorage"},     {at::kInt, "IntStorage"},
      {at::kShort, "ShortStorage"},       {at::kChar, "CharStorage"},     {at::kByte, "ByteStorage"},
      {at::kBool, "BoolStorage"}};
  return names;
}

// Pickle protocol 2, the opcodes torch.save itself uses for tensors and dicts.
class Pickle {
 public:
  void proto() { bytes_ += "\x80\x02"; }
  void op(char c) { bytes_ += c; }
  void global(const std::string& module, const std::string& name) { bytes_ += "c" + module + "\n" + name + "\n"; }
  void string(const std::string& s) {
    op('X');
    little(s.size(), 4);
    bytes_ += s;
  }
  void integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      little(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    } else {
      op('\x8a');  // LONG1: 8 little-endian two's-complement bytes
      op('\x08');
      little(static_cast<uint64_t>(v), 8);
    }
  }
  void int_tuple(at::IntArrayRef values) {
    op('(');
    for (int64_t v : values) integer(v);
    op('t');
  }
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, backward_hooks)
  void tensor(const at::Tensor& t, const std::string& key) {
    auto it = storage_names().find(t.scalar_type());
    if (it == storage_names().end()) fail(std::string("cannot save tensors of type ") + c10::toString(t.scalar_type()));
    global("torch._utils", "_rebuild_tensor_v2");
    op('(');
    op('(');
    string("storage");
    global("torch", it->second);
    string(key);
    string("cpu");
    integer(t.numel());
    op('t');
    op('Q');  // BINPERSID: the storage is the archive's data/<key>
    integer(0);
    int_tuple(t.sizes());
    int_tuple(t.strides());
    op('\x89');  // requires_grad = False
    global("collections", "OrderedDict");
    op(')');
    op('R');
    op('t');
    op('R');
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void little(uint64_t v, int n) {
    for (int b = 0; b < n; ++b) bytes_ += static_cast<char>((v >> (8 * b)) & 0xff);
  }
  std::string bytes_;
};

// The archive is streamed to the temporary through a sink that keeps the first write error and
// drops what follows, so PyTorchStreamWriter never sees a failure: it would throw, and then throw
// again from its destructor while unwinding (std::terminate: a full disk was SIGABRT and a 15-line
// trace). The error is reported after the writer is done, with its cause.
void write_archive(const std::string& path, const Pickle& pickle, const std::vector<at::Tensor>& storages) {
  install_signal_cleanup();
  PendingFile pending(path);  // removed on error or Ctrl-C; renamed into place at the end
  const int fd = ::open(pending.temp_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail("cannot write '" + path + "' (" + std::strerror(errno) + ")");
  int error = 0;
  const auto sink = [fd, &error](const void* data, size_t size) -> size_t {
    const char* bytes = static_cast<const char*>(data);
    for (size_t done = 0; error == 0 && done < size;) {
      const ssize_t n = ::write(fd, bytes + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        error = n < 0 ? errno : EIO;
      else
        done += static_cast<size_t>(n);
    }
    return size;
  };
  std::string refused;
  try {
    caffe2::serialize::PyTorchStreamWriter writer(sink);
    writer.writeRecord("data.pkl", pickle.bytes().data(), pickle.bytes().size());
    writer.writeRecord("byteorder", "little", 6);
    for (size_t i = 0; i < storages.size(); ++i)
      writer.writeRecord("data/" + std::to_string(i), storages[i].data_ptr(), storages[i].nbytes());
    writer.writeEndOfFile();
  } catch (const std::exception& e) {
    const std::string reason = e.what();
    refused = reason.substr(0, reason.find('\n'));
  }
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) fail("cannot write '" + path + "' (" + std::strerror(error) + ")");
  if (!refused.empty()) fail("cannot write '" + path + "': " + refused);
  pending.commit();
}

}  // namespace

void write_torch_save_file(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& items) {
  Pickle pickle;
  std::vector<at::Tensor> storages;
  pickle.proto();
  pickle.global("collections", "OrderedDict");  // what model.state_dict() is
  pickle.op(')');
  pickle.op('R');
  if (!items.empty()) {
    pickle.op('(');
    for (const auto& [name, tensor] : items) {
      storages.push_back(tensor.detach().to(at::kCPU).contiguous());
      pickle.string(name);
      pickle.tensor(storages.back(), std::to_string(storages.size() - 1));
    }
    pickle.op('u');
  }
  pickle.op('.');
  write_archive(path, pickle, storages);
}

void write_torch_save_file(const std::string& path, const at::Tensor& tensor) {
  Pickle pickle;
  const at::Tensor storage = tensor.detach().to(at::kCPU).contiguous();
  pickle.proto();
  pickle.tensor(storage, "0");
  pickle.op('.');
  write_archive(path, pickle, {storage});
}

}  // namespace condbench::detail
