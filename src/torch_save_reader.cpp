#include "torch_save_reader.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <unordered_map>

#include "condbench/error.h"

namespace condbench::detail {

namespace {

// A Python value as far as state_dicts need: the pickle VM's stack holds these.
struct Value;
using ValuePtr = std::shared_ptr<Value>;
struct Value {
  enum class Kind { none, boolean, integer, floating, string, tuple, list, dict, global, storage, tensor };
  Kind kind = Kind::none;
  int64_t integer = 0;
  double floating = 0;
  std::string text;                                   // string; global "module.name"; storage key
  std::vector<ValuePtr> items;                        // tuple, list
  std::vector<std::pair<ValuePtr, ValuePtr>> entries;  // dict
  at::ScalarType dtype = at::kFloat;                  // storage
  at::Tensor tensor;                                  // tensor, or a storage's bytes once loaded
};

ValuePtr make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

const std::map<std::string, at::ScalarType>& storage_types() {
  static const std::map<std::string, at::ScalarType> types = {
      {"torch.FloatStorage", at::kFloat},   {"torch.DoubleStorage", at::kDouble}, {"torch.HalfStorage", at::kHalf},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong}, {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort},   {"torch.CharStorage", at::kChar},     {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  return types;
}

class PickleMachine {
 public:
  PickleMachine(const std::string& pickle, caffe2::serialize::PyTorchStreamReader& archive)
      : p_(pickle), archive_(archive) {}

  ValuePtr run() {
    while (true) {
      const unsigned char op = byte();
      switch (op) {
        case 0x80: byte(); break;                                   // PROTO
        case 0x95: bytes(8); break;                                 // FRAME
        case '(': marks_.push_back(stack_.size()); break;           // MARK
        case '.': return pop();                                     // STOP
        case 'N': push(make(Value::Kind::none)); break;
        case 0x88: case 0x89: {                                     // NEWTRUE, NEWFALSE
          auto v = make(Value::Kind::boolean);
          v->integer = op == 0x88;
          push(v);
          break;
        }
        case 'K': push_int(static_cast<int64_t>(little(1))); break;  // BININT1
        case 'M': push_int(static_cast<int64_t>(little(2))); break;  // BININT2
        case 'J': push_int(static_cast<int32_t>(little(4))); break;  // BININT
        case 0x8a: {                                                 // LONG1
          const size_t n = little(1);
          int64_t value = 0;
          if (n > 8) fail_at("integer too large");
          for (size_t b = 0; b < n; ++b) value |= static_cast<int64_t>(static_cast<unsigned char>(p_[at_ + b])) << (8 * b);
          if (n > 0 && n < 8 && (p_[at_ + n - 1] & 0x80)) value -= int64_t{1} << (8 * n);  // sign
          at_ += n;
          push_int(value);
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          uint64_t bits = 0;
          for (int b = 0; b < 8; ++b) bits = (bits << 8) | byte();
          auto v = make(Value::Kind::floating);
          std::memcpy(&v->floating, &bits, 8);
          push(v);
          break;
        }
        case 'X': push_string(bytes(little(4))); break;     // BINUNICODE
        case 0x8c: push_string(bytes(little(1))); break;    // SHORT_BINUNICODE
        case 0x8d: push_string(bytes(little(8))); break;    // BINUNICODE8
        case 'c': {                                          // GLOBAL
          const std::string module = line(), name = line();
          push_global(module + "." + name);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const ValuePtr name = pop(), module = pop();
          push_global(module->text + "." + name->text);
          break;
        }
        case 'q': memo_[little(1)] = top(); break;  // BINPUT
        case 'r': memo_[little(4)] = top(); break;  // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = top(); break;  // MEMOIZE
        case 'h': push(memo(little(1))); break;  // BINGET
        case 'j': push(memo(little(4))); break;  // LONG_BINGET
        case ')': push(make(Value::Kind::tuple)); break;
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          auto t = make(Value::Kind::tuple);
          t->items.resize(op - 0x84);
          for (size_t i = t->items.size(); i-- > 0;) t->items[i] = pop();
          push(t);
          break;
        }
        case 't': {  // TUPLE
          auto t = make(Value::Kind::tuple);
          t->items = pop_to_mark();
          push(t);
          break;
        }
        case ']': push(make(Value::Kind::list)); break;
        case 'l': {  // LIST
          auto l = make(Value::Kind::list);
          l->items = pop_to_mark();
          push(l);
          break;
        }
        case 'a': {  // APPEND
          const ValuePtr v = pop();
          expect(top(), Value::Kind::list)->items.push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          std::vector<ValuePtr> vs = pop_to_mark();
          auto& items = expect(top(), Value::Kind::list)->items;
          items.insert(items.end(), vs.begin(), vs.end());
          break;
        }
        case '}': push(make(Value::Kind::dict)); break;
        case 'd': {  // DICT
          auto d = make(Value::Kind::dict);
          set_items(*d, pop_to_mark());
          push(d);
          break;
        }
        case 's': {  // SETITEM
          const ValuePtr value = pop(), key = pop();
          expect(top(), Value::Kind::dict)->entries.emplace_back(key, value);
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<ValuePtr> kv = pop_to_mark();
          set_items(*expect(top(), Value::Kind::dict), kv);
          break;
        }
        case 'Q': push(persistent(pop())); break;  // BINPERSID
        case 'R': {                                 // REDUCE
          const ValuePtr args = pop(), callable = pop();
          push(call(*expect(callable, Value::Kind::global), *expect(args, Value::Kind::tuple)));
          break;
        }
        case 'b': pop(); break;  // BUILD: an OrderedDict's _metadata, which condbench does not need
        default:
          fail_at("pickle opcode 0x" + hex(op) + " is not supported");
      }
    }
  }

 private:
  [[noreturn]] void fail_at(const std::string& message) const {
    fail(message + " (pickle byte " + std::to_string(at_) + ")");
  }
  static std::string hex(unsigned v) {
    const char* digits = "0123456789abcdef";
    return {digits[(v >> 4) & 15], digits[v & 15]};
  }
  unsigned char byte() {
    if (at_ >= p_.size()) fail_at("the pickle ends early");
    return static_cast<unsigned char>(p_[at_++]);
  }
  std::string bytes(uint64_t n) {
    if (n > p_.size() - at_) fail_at("the pickle ends early");
    std::string s = p_.substr(at_, n);
    at_ += n;
    return s;
  }
  uint64_t little(int n) {
    uint64_t v = 0;
    for (int b = 0; b < n; ++b) v |= static_cast<uint64_t>(byte()) << (8 * b);
    return v;
  }
  std::string line() {
    const size_t end = p_.find('\n', at_);
    if (end == std::string::npos) fail_at("the pickle ends early");
    std::string s = p_.substr(at_, end - at_);
    at_ = end + 1;
    return s;
  }
  void push(ValuePtr v) { stack_.push_back(std::move(v)); }
  void push_int(int64_t i) {
    auto v = make(Value::Kind::integer);
    v->integer = i;
    push(v);
  }
  void push_string(std::string s) {
    auto v = make(Value::Kind::string);
    v->text = std::move(s);
    push(v);
  }
  void push_global(std::string name) {
    auto v = make(Value::Kind::global);
    v->text = std::move(name);
    push(v);
  }
  ValuePtr top() {
    if (stack_.empty()) fail_at("the pickle's stack is empty");
    return stack_.back();
  }
  ValuePtr pop() {
    ValuePtr v = top();
    stack_.pop_back();
    return v;
  }
  std::vector<ValuePtr> pop_to_mark() {
    if (marks_.empty()) fail_at("no MARK");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<ValuePtr> vs(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return vs;
  }
  ValuePtr memo(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail_at("memo " + std::to_string(index) + " is not set");
    return it->second;
  }
  ValuePtr expect(const ValuePtr& v, Value::Kind kind) {
    if (v->kind != kind) fail_at("unexpected object in the pickle");
    return v;
  }
  static void set_items(Value& dict, const std::vector<ValuePtr>& kv) {
    for (size_t i = 0; i + 1 < kv.size(); i += 2) dict.entries.emplace_back(kv[i], kv[i + 1]);
  }

  // ('storage', <torch.XStorage>, key, location, numel): the bytes are the archive's data/<key>.
  ValuePtr persistent(const ValuePtr& pid) {
    const auto& t = expect(pid, Value::Kind::tuple)->items;
    if (t.size() < 5 || t[0]->text != "storage") fail_at("unknown persistent object");
    auto it = storage_types().find(t[1]->text);
    if (it == storage_types().end()) fail_at("unsupported storage type " + t[1]->text);
    auto& storage = storages_[t[2]->text];
    if (!storage) {
      storage = make(Value::Kind::storage);
      storage->dtype = it->second;
      storage->text = t[2]->text;
      const auto [data, size] = archive_.getRecord("data/" + t[2]->text);
      const int64_t element = static_cast<int64_t>(c10::elementSize(it->second));
      storage->tensor = at::empty({static_cast<int64_t>(size) / element}, at::TensorOptions().dtype(it->second));
      std::memcpy(storage->tensor.data_ptr(), data.get(), size);
    }
    return storage;
  }

  static std::vector<int64_t> ints(const ValuePtr& tuple) {
    std::vector<int64_t> out;
    for (const ValuePtr& v : tuple->items) out.push_back(v->integer);
    return out;
  }

  ValuePtr call(const Value& callable, const Value& args) {
    const std::string& name = callable.text;
    if (name == "collections.OrderedDict") return make(Value::Kind::dict);
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      if (args.items.size() < 4) fail_at(name + ": too few arguments");
      const Value& storage = *expect(args.items[0], Value::Kind::storage);
      auto v = make(Value::Kind::tensor);
      v->tensor = storage.tensor.as_strided(ints(args.items[2]), ints(args.items[3]), args.items[1]->integer).clone();
      return v;
    }
    if (name == "torch.jit._pickle.restore_type_tag") {  // what torch::pickle_save wraps a typed dict in
      if (args.items.empty()) fail_at(name + ": no arguments");
      return args.items[0];
    }
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (args.items.empty()) fail_at(name + ": no arguments");
      return expect(args.items[0], Value::Kind::tensor);
    }
    fail_at("objects of type " + name + " are not supported (expected tensors and dicts)");
  }

  const std::string& p_;
  caffe2::serialize::PyTorchStreamReader& archive_;
  size_t at_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, ValuePtr> memo_;
  std::map<std::string, ValuePtr> storages_;
};

}  // namespace

SavedObject read_torch_save_file(const std::string& what, const std::string& path) {
  const std::string prefix = what + " '" + path + "': ";
  {
    std::ifstream probe(path, std::ios::binary);
    if (!probe) fail(prefix + "cannot open: " + std::strerror(errno));
    char magic[2] = {0, 0};
    probe.read(magic, 2);
    if (magic[0] != 'P' || magic[1] != 'K')
      fail(prefix + "not a torch.save file (expected the zip format of PyTorch >= 1.6)");
  }
  ValuePtr root;
  try {
    caffe2::serialize::PyTorchStreamReader archive(path);
    if (archive.hasRecord("byteorder")) {
      const auto [data, size] = archive.getRecord("byteorder");
      if (std::string(static_cast<const char*>(data.get()), size) != "little")
        fail("big-endian files are not supported");
    }
    const auto [data, size] = archive.getRecord("data.pkl");
    const std::string pickle(static_cast<const char*>(data.get()), size);
    root = PickleMachine(pickle, archive).run();
  } catch (const Error& e) {
    fail(prefix + e.what());
  } catch (const std::exception& e) {
    const std::string reason = e.what();
    fail(prefix + "not a readable torch.save file (" + reason.substr(0, reason.find('\n')) + ")");
  }
  SavedObject saved;
  if (root->kind == Value::Kind::tensor) {
    saved.kind = SavedObject::Kind::tensor;
    saved.tensor = root->tensor;
    return saved;
  }
  if (root->kind != Value::Kind::dict) fail(prefix + "expected a tensor or a dict of tensors");
  saved.kind = SavedObject::Kind::dict_of_tensors;
  for (const auto& [key, value] : root->entries) {
    if (key->kind != Value::Kind::string) fail(prefix + "a dict key is not a string");
    if (value->kind != Value::Kind::tensor) fail(prefix + "'" + key->text + "' is not a tensor");
    saved.items.emplace_back(key->text, value->tensor);
  }
  return saved;
}

}  // namespace condbench::detail
