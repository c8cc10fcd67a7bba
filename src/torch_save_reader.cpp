#include "torch_save_reader.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>

#include "condbench/error.h"
#include "condbench/input_file.h"
#include "zip_directory.h"

namespace condbench::detail {

namespace {

// a * b and a + b for sizes from the file, which may be chosen to overflow.
uint64_t checked_mul(uint64_t a, uint64_t b, const char* limit) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail(std::string("a size overflows (limit: ") + limit + ")");
  return r;
}
uint64_t checked_add(uint64_t a, uint64_t b, const char* limit) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) fail(std::string("a size overflows (limit: ") + limit + ")");
  return r;
}

// A storage the pickle names: its bytes are the archive's data/<key>, read only after every
// tensor has been checked.
struct Storage {
  std::string key;
  at::ScalarType dtype = at::kFloat;
  uint64_t numel = 0;  // as the pickle declares it; the record must hold exactly this many elements
  at::Tensor data;     // once read
};

// A tensor as _rebuild_tensor_v2 describes it: a strided view of a storage, already checked to lie
// inside it.
struct TensorView {
  size_t storage = 0;  // index into the machine's storages
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};

// A Python value as far as state_dicts need: the pickle VM's stack holds these. The machine owns
// every value in one arena and values point at each other with plain pointers, so no value tree
// is ever destroyed recursively, however deep or cyclic a crafted pickle makes it.
struct Value {
  enum class Kind { none, boolean, integer, floating, string, tuple, list, dict, global, storage, tensor };
  Kind kind = Kind::none;
  int64_t integer = 0;  // integer; storage and tensor: their index in the machine
  double floating = 0;
  std::string text;                                // string; global "module.name"
  std::vector<Value*> items;                       // tuple, list
  std::vector<std::pair<Value*, Value*>> entries;  // dict
};

const std::map<std::string, at::ScalarType>& storage_types() {
  static const std::map<std::string, at::ScalarType> types = {
      {"torch.FloatStorage", at::kFloat},       {"torch.DoubleStorage", at::kDouble}, {"torch.HalfStorage", at::kHalf},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong},     {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort},       {"torch.CharStorage", at::kChar},     {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  return types;
}

class PickleMachine {
 public:
  // `file_size` bounds the bytes of every storage and tensor the pickle may describe.
  PickleMachine(const std::string& pickle, uint64_t file_size) : p_(pickle), file_size_(file_size) {}

  Value* run() {
    while (true) {
      if (++ops_ > kMaxPickleOps)
        fail_at("more than " + std::to_string(kMaxPickleOps) + " opcodes (limit: pickle opcodes)");
      const unsigned char op = byte();
      switch (op) {
        case 0x80:
          byte();
          break;  // PROTO
        case 0x95:
          bytes(8);
          break;   // FRAME
        case '(':  // MARK
          if (marks_.size() >= kMaxPickleNesting)
            fail_at("nested deeper than " + std::to_string(kMaxPickleNesting) + " (limit: pickle nesting)");
          marks_.push_back(stack_.size());
          break;
        case '.':
          return pop();  // STOP
        case 'N':
          push(make(Value::Kind::none));
          break;
        case 0x88:
        case 0x89: {  // NEWTRUE, NEWFALSE
          Value* v = make(Value::Kind::boolean);
          v->integer = op == 0x88;
          push(v);
          break;
        }
        case 'K':
          push_int(static_cast<int64_t>(little(1)));
          break;  // BININT1
        case 'M':
          push_int(static_cast<int64_t>(little(2)));
          break;  // BININT2
        case 'J':
          push_int(static_cast<int32_t>(little(4)));
          break;      // BININT
        case 0x8a: {  // LONG1
          const size_t n = little(1);
          if (n > 8) fail_at("integer too large");
          const std::string digits = bytes(n);  // checked against the end of the pickle
          int64_t value = 0;
          for (size_t b = 0; b < n; ++b)
            value = static_cast<int64_t>(static_cast<uint64_t>(value) |
                                         static_cast<uint64_t>(static_cast<unsigned char>(digits[b])) << (8 * b));
          if (n > 0 && n < 8 && (digits[n - 1] & 0x80)) value -= int64_t{1} << (8 * n);  // sign
          push_int(value);
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          uint64_t bits = 0;
          for (int b = 0; b < 8; ++b) bits = (bits << 8) | byte();
          Value* v = make(Value::Kind::floating);
          std::memcpy(&v->floating, &bits, 8);
          push(v);
          break;
        }
        case 'X':
          push_string(bytes(little(4)));
          break;  // BINUNICODE
        case 0x8c:
          push_string(bytes(little(1)));
          break;  // SHORT_BINUNICODE
        case 0x8d:
          push_string(bytes(little(8)));
          break;     // BINUNICODE8
        case 'c': {  // GLOBAL
          const std::string module = line(), name = line();
          push_global(module, name);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          Value* name = expect(pop(), Value::Kind::string);
          Value* module = expect(pop(), Value::Kind::string);
          push_global(module->text, name->text);
          break;
        }
        case 'q':
          memo_[little(1)] = top();
          break;  // BINPUT
        case 'r':
          memo_[little(4)] = top();
          break;  // LONG_BINPUT
        case 0x94:
          memo_[memo_.size()] = top();
          break;  // MEMOIZE
        case 'h':
          push(memo(little(1)));
          break;  // BINGET
        case 'j':
          push(memo(little(4)));
          break;  // LONG_BINGET
        case ')':
          push(make(Value::Kind::tuple));
          break;
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          Value* t = make(Value::Kind::tuple);
          t->items.resize(op - 0x84);
          for (size_t i = t->items.size(); i-- > 0;) t->items[i] = pop();
          push(t);
          break;
        }
        case 't': {  // TUPLE
          Value* t = make(Value::Kind::tuple);
          t->items = pop_to_mark();
          push(t);
          break;
        }
        case ']':
          push(make(Value::Kind::list));
          break;
        case 'l': {  // LIST
          Value* l = make(Value::Kind::list);
          l->items = pop_to_mark();
          push(l);
          break;
        }
        case 'a': {  // APPEND
          Value* v = pop();
          add_items(expect(top(), Value::Kind::list)->items, {v});
          break;
        }
        case 'e': {  // APPENDS
          const std::vector<Value*> vs = pop_to_mark();
          add_items(expect(top(), Value::Kind::list)->items, vs);
          break;
        }
        case '}':
          push(make(Value::Kind::dict));
          break;
        case 'd': {  // DICT
          Value* d = make(Value::Kind::dict);
          set_items(*d, pop_to_mark());
          push(d);
          break;
        }
        case 's': {  // SETITEM
          Value* value = pop();
          Value* key = pop();
          set_items(*expect(top(), Value::Kind::dict), {key, value});
          break;
        }
        case 'u': {  // SETITEMS
          const std::vector<Value*> kv = pop_to_mark();
          set_items(*expect(top(), Value::Kind::dict), kv);
          break;
        }
        case 'Q':
          push(persistent(pop()));
          break;     // BINPERSID
        case 'R': {  // REDUCE
          Value* args = expect(pop(), Value::Kind::tuple);
          Value* callable = expect(pop(), Value::Kind::global);
          push(call(*callable, *args));
          break;
        }
        case 'b':
          pop();
          break;  // BUILD: an OrderedDict's _metadata, which condbench does not need
        default:
          fail_at("pickle opcode 0x" + hex(op) + " is not supported");
      }
    }
  }

  std::vector<Storage>& storages() { return storages_; }
  const TensorView& view(const Value& tensor) const { return views_[static_cast<size_t>(tensor.integer)]; }
  // The first class the pickle names that no state_dict or tensor uses ("__main__.EarlyExit":
  // torch.save(model) instead of torch.save(model.state_dict())), or "".
  const std::string& foreign_global() const { return foreign_global_; }

 private:
  [[noreturn]] void fail_at(const std::string& message) const {
    fail(message + " (pickle byte " + std::to_string(at_) + ")");
  }
  static std::string hex(unsigned v) {
    const char* digits = "0123456789abcdef";
    return {digits[(v >> 4) & 15], digits[v & 15]};
  }
  Value* make(Value::Kind kind) {
    arena_.push_back(std::make_unique<Value>());
    arena_.back()->kind = kind;
    return arena_.back().get();
  }
  void spend_text(uint64_t n) {
    text_bytes_ += n;
    if (text_bytes_ > kMaxPickleTextBytes)
      fail_at("strings total more than " + std::to_string(kMaxPickleTextBytes) + " bytes (limit: pickle text)");
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
  void push(Value* v) { stack_.push_back(v); }
  void push_int(int64_t i) {
    Value* v = make(Value::Kind::integer);
    v->integer = i;
    push(v);
  }
  void push_string(std::string s) {
    spend_text(s.size());
    Value* v = make(Value::Kind::string);
    v->text = std::move(s);
    push(v);
  }
  void push_global(const std::string& module, const std::string& name) {
    // No global that tensors and dicts use is long; a long one is a crafted file.
    if (module.size() + name.size() > 200) fail_at("a global's name is too long");
    if (foreign_global_.empty() && module != "collections" && module != "_codecs" && module.rfind("torch", 0) != 0)
      foreign_global_ = printable(module + "." + name);
    Value* v = make(Value::Kind::global);
    v->text = module + "." + name;
    push(v);
  }
  Value* top() {
    if (stack_.empty()) fail_at("the pickle's stack is empty");
    return stack_.back();
  }
  Value* pop() {
    Value* v = top();
    stack_.pop_back();
    return v;
  }
  std::vector<Value*> pop_to_mark() {
    if (marks_.empty()) fail_at("no MARK");
    const size_t mark = marks_.back();
    marks_.pop_back();
    if (mark > stack_.size()) fail_at("a MARK lies above the stack");
    std::vector<Value*> vs(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return vs;
  }
  Value* memo(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail_at("memo " + std::to_string(index) + " is not set");
    return it->second;
  }
  Value* expect(Value* v, Value::Kind kind) {
    if (v->kind != kind) fail_at("unexpected object in the pickle");
    return v;
  }
  void add_items(std::vector<Value*>& items, const std::vector<Value*>& more) {
    if (items.size() + more.size() > kMaxPickleEntries)
      fail_at("a list holds more than " + std::to_string(kMaxPickleEntries) + " items (limit: pickle entries)");
    items.insert(items.end(), more.begin(), more.end());
  }
  void set_items(Value& dict, const std::vector<Value*>& kv) {
    if (kv.size() % 2 != 0) fail_at("a dict is given a key without a value");
    if (dict.entries.size() + kv.size() / 2 > kMaxPickleEntries)
      fail_at("a dict holds more than " + std::to_string(kMaxPickleEntries) + " entries (limit: pickle entries)");
    for (size_t i = 0; i + 1 < kv.size(); i += 2) dict.entries.emplace_back(kv[i], kv[i + 1]);
  }
  int64_t integer(Value* v, const char* what) {
    if (v->kind != Value::Kind::integer) fail_at(std::string(what) + " is not an integer");
    return v->integer;
  }

  // ('storage', <torch.XStorage>, key, location, numel): the bytes are the archive's data/<key>.
  Value* persistent(Value* pid) {
    const auto& t = expect(pid, Value::Kind::tuple)->items;
    if (t.size() < 5 || t[0]->kind != Value::Kind::string || t[0]->text != "storage")
      fail_at("unknown persistent object");
    if (t[1]->kind != Value::Kind::global) fail_at("a storage without a type");
    auto type = storage_types().find(t[1]->text);
    if (type == storage_types().end()) fail_at("unsupported storage type " + printable(t[1]->text));
    if (t[2]->kind != Value::Kind::string) fail_at("a storage key is not a string");
    const int64_t numel = integer(t[4], "a storage's size");
    if (numel < 0) fail_at("a storage has a negative size");
    auto [it, added] = storage_index_.emplace(t[2]->text, storages_.size());
    if (added) {
      const uint64_t bytes = checked_mul(static_cast<uint64_t>(numel), c10::elementSize(type->second), "tensor bytes");
      if (bytes > file_size_)
        fail_at("storage '" + printable(t[2]->text) + "' declares " + std::to_string(bytes) +
                " bytes, more than the file's " + std::to_string(file_size_) + " (limit: tensor bytes)");
      storages_.push_back({t[2]->text, type->second, static_cast<uint64_t>(numel), {}});
    } else if (storages_[it->second].dtype != type->second ||
               storages_[it->second].numel != static_cast<uint64_t>(numel)) {
      fail_at("storage '" + printable(t[2]->text) + "' is declared twice, differently");
    }
    Value* v = make(Value::Kind::storage);
    v->integer = static_cast<int64_t>(it->second);
    return v;
  }

  std::vector<int64_t> dims(Value* tuple, const char* what) {
    expect(tuple, Value::Kind::tuple);
    if (tuple->items.size() > kMaxTensorDims)
      fail_at("a tensor has more than " + std::to_string(kMaxTensorDims) + " dimensions (limit: tensor dimensions)");
    std::vector<int64_t> out;
    for (Value* v : tuple->items) {
      const int64_t d = integer(v, what);
      if (d < 0) fail_at(std::string("a tensor has a negative ") + what);
      out.push_back(d);
    }
    return out;
  }

  // The view must lie inside its storage before it is ever made: no stride, size or offset may
  // reach past the storage's last element, and the tensor's own bytes count against the file.
  Value* rebuild_tensor(const std::string& name, const Value& args) {
    if (args.items.size() < 4) fail_at(name + ": too few arguments");
    const Storage& storage = storages_[static_cast<size_t>(expect(args.items[0], Value::Kind::storage)->integer)];
    TensorView view;
    view.storage = static_cast<size_t>(args.items[0]->integer);
    view.offset = integer(args.items[1], "a tensor's storage offset");
    view.sizes = dims(args.items[2], "size");
    view.strides = dims(args.items[3], "stride");
    if (view.offset < 0) fail_at("a tensor has a negative storage offset");
    if (view.sizes.size() != view.strides.size()) fail_at("a tensor's sizes and strides differ in length");
    uint64_t numel = 1, last = static_cast<uint64_t>(view.offset);
    for (size_t d = 0; d < view.sizes.size(); ++d) {
      numel = checked_mul(numel, static_cast<uint64_t>(view.sizes[d]), "tensor bytes");
      if (view.sizes[d] > 0)
        last = checked_add(last,
                           checked_mul(static_cast<uint64_t>(view.sizes[d] - 1), static_cast<uint64_t>(view.strides[d]),
                                       "tensor bytes"),
                           "tensor bytes");
    }
    if (numel > 0 && last >= storage.numel)
      fail_at("a tensor reaches element " + std::to_string(last) + " of storage '" + printable(storage.key) +
              "', which holds " + std::to_string(storage.numel) + " (strides and offset must lie inside the storage)");
    tensor_bytes_ =
        checked_add(tensor_bytes_, checked_mul(numel, c10::elementSize(storage.dtype), "tensor bytes"), "tensor bytes");
    if (tensor_bytes_ > file_size_)
      fail_at("the tensors total " + std::to_string(tensor_bytes_) + " bytes, more than the file's " +
              std::to_string(file_size_) + " (limit: tensor bytes)");
    Value* v = make(Value::Kind::tensor);
    v->integer = static_cast<int64_t>(views_.size());
    views_.push_back(std::move(view));
    return v;
  }

  Value* call(const Value& callable, const Value& args) {
    const std::string& name = callable.text;
    if (name == "collections.OrderedDict") return make(Value::Kind::dict);
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor")
      return rebuild_tensor(name, args);
    if (name == "torch.jit._pickle.restore_type_tag") {  // what torch::pickle_save wraps a typed dict in
      if (args.items.empty()) fail_at(name + ": no arguments");
      return args.items[0];
    }
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (args.items.empty()) fail_at(name + ": no arguments");
      return expect(args.items[0], Value::Kind::tensor);
    }
    fail_at("objects of type " + printable(name) + " are not supported (expected tensors and dicts)");
  }

  const std::string& p_;
  const uint64_t file_size_;
  size_t at_ = 0;
  std::string foreign_global_;
  uint64_t ops_ = 0, text_bytes_ = 0, tensor_bytes_ = 0;
  std::vector<std::unique_ptr<Value>> arena_;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value*> memo_;
  std::map<std::string, size_t> storage_index_;
  std::vector<Storage> storages_;
  std::vector<TensorView> views_;
};

at::Tensor meta_tensor(const Storage& storage, const TensorView& view) {
  return at::empty(view.sizes, at::TensorOptions().dtype(storage.dtype).device(at::kMeta));
}

// The storage's bytes from data/<key>, whose size the pickle fixed; read at most once.
void read_storage(caffe2::serialize::PyTorchStreamReader& archive, Storage& storage) {
  if (storage.data.defined()) return;
  const std::string record = "data/" + storage.key;
  if (!archive.hasRecord(record)) fail("storage '" + printable(storage.key) + "' has no record in the archive");
  const uint64_t bytes = storage.numel * c10::elementSize(storage.dtype);  // checked in the pickle
  const uint64_t size = archive.getRecordSize(record);
  if (size != bytes)
    fail("storage '" + printable(storage.key) + "' has " + std::to_string(size) + " bytes, expected " +
         std::to_string(bytes) + " (" + std::to_string(storage.numel) + " elements of " +
         std::to_string(c10::elementSize(storage.dtype)) + " bytes)");
  storage.data = at::empty({static_cast<int64_t>(storage.numel)}, at::TensorOptions().dtype(storage.dtype));
  if (bytes > 0) archive.getRecord(record, storage.data.data_ptr(), bytes);
}

at::Tensor materialize(caffe2::serialize::PyTorchStreamReader& archive, PickleMachine& machine, const Value& v) {
  const TensorView& view = machine.view(v);
  Storage& storage = machine.storages()[view.storage];
  read_storage(archive, storage);
  if (storage.numel == 0) return at::empty(view.sizes, at::TensorOptions().dtype(storage.dtype));
  return storage.data.as_strided(view.sizes, view.strides, view.offset).clone();
}

SavedObject read_archive(std::istream& in, uint64_t size, const HeaderCheck& check) {
  check_zip_directory(in, size);  // every record's declared size fits the file
  in.clear();
  in.seekg(0);
  caffe2::serialize::PyTorchStreamReader archive(&in);
  if (archive.hasRecord("byteorder")) {
    if (archive.getRecordSize("byteorder") > 16) fail("the byteorder record is too long");
    const auto [data, n] = archive.getRecord("byteorder");
    if (std::string(static_cast<const char*>(data.get()), n) != "little") fail("big-endian files are not supported");
  }
  if (archive.hasRecord("constants.pkl") || archive.hasRecord("code/__torch__.py"))
    fail(
        "a TorchScript archive (torch.jit.save), not a state_dict: save the weights with "
        "torch.save(model.state_dict(), path)");
  const uint64_t pickle_size = archive.getRecordSize("data.pkl");
  if (pickle_size > kMaxPickleBytes)
    fail("data.pkl has " + std::to_string(pickle_size) + " bytes, more than " + std::to_string(kMaxPickleBytes) +
         " (limit: pickle size)");
  std::string pickle(pickle_size, '\0');
  if (pickle_size > 0) archive.getRecord("data.pkl", pickle.data(), pickle_size);
  PickleMachine machine(pickle, size);
  const Value* root = nullptr;
  try {
    root = machine.run();
  } catch (const Error& e) {
    if (machine.foreign_global().empty()) throw;
    fail(std::string(e.what()) + "; the file pickles a " + machine.foreign_global() +
         " object, not tensors (torch.save(model) where torch.save(model.state_dict()) was meant?)");
  }

  // Names and shapes first: nothing is read from data/ until they are known to be wanted.
  std::vector<std::pair<std::string, const Value*>> tensors;
  SavedObject saved;
  if (root->kind == Value::Kind::tensor) {
    saved.kind = SavedObject::Kind::tensor;
    tensors.emplace_back("", root);
  } else if (root->kind == Value::Kind::dict) {
    saved.kind = SavedObject::Kind::dict_of_tensors;
    std::map<std::string, int> seen;
    for (const auto& [key, value] : root->entries) {
      if (key->kind != Value::Kind::string) fail("a dict key is not a string");
      if (value->kind != Value::Kind::tensor) fail("'" + printable(key->text) + "' is not a tensor");
      if (seen[key->text]++) fail("key '" + printable(key->text) + "' appears twice");
      tensors.emplace_back(key->text, value);
    }
  } else {
    fail("expected a tensor or a dict of tensors");
  }
  if (check) {
    std::vector<std::pair<std::string, at::Tensor>> headers;
    for (const auto& [name, value] : tensors)
      headers.emplace_back(name, meta_tensor(machine.storages()[machine.view(*value).storage], machine.view(*value)));
    check(headers);
  }
  for (const auto& [name, value] : tensors) {
    at::Tensor t = materialize(archive, machine, *value);
    if (saved.kind == SavedObject::Kind::tensor)
      saved.tensor = t;
    else
      saved.items.emplace_back(name, t);
  }
  return saved;
}

}  // namespace

SavedObject read_torch_save(const std::string& what, const std::string& path, std::istream& in, uint64_t size,
                            const HeaderCheck& check) {
  const std::string prefix = what + " '" + path + "': ";
  char magic[2] = {0, 0};
  in.read(magic, 2);
  if (in.gcount() != 2 || magic[0] != 'P' || magic[1] != 'K')
    fail(prefix + "not a torch.save file (expected the zip format of PyTorch >= 1.6)");
  try {
    return read_archive(in, size, check);
  } catch (const Error& e) {
    // What `check` says as "weights: ..." (the model's own words) reads "weights '<path>': ..." here.
    const std::string why = e.what(), own = what + ": ";
    fail(prefix + (why.rfind(own, 0) == 0 ? why.substr(own.size()) : why));
  } catch (const std::bad_alloc&) {
    throw;  // the limits above should make this impossible; the tool reports it as internal
  } catch (const c10::Error& e) {
    // LibTorch's zip reader refused the archive. what() would symbolize a backtrace (slow, and
    // not for the user); the message alone says what it disliked.
    const std::string reason = e.what_without_backtrace();
    fail(prefix + "not a readable torch.save file (" + printable(reason.substr(0, reason.find('\n'))) + ")");
  } catch (const std::exception& e) {
    const std::string reason = e.what();
    fail(prefix + "not a readable torch.save file (" + printable(reason.substr(0, reason.find('\n'))) + ")");
  }
}

SavedObject read_torch_save_file(const std::string& what, const std::string& path, const HeaderCheck& check) {
  require_regular_file(what, path);  // a FIFO's open would wait for a writer for ever
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(what + " '" + path + "': cannot open: " + std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0) fail(what + " '" + path + "': cannot read its size");
  in.seekg(0);
  return read_torch_save(what, path, in, static_cast<uint64_t>(size), check);
}

void check_values(const std::string& what, const std::string& path, const std::string& key, const at::Tensor& t) {
  if (!at::isFloatingType(t.scalar_type()) || t.numel() == 0) return;
  // Appended piece by piece: GCC 12's -Wstringop-overflow misreads the chained operator+ here.
  std::string named = what;
  named.append(" '").append(path).append("': ");
  if (key.empty())
    named.append("the tensor");
  else
    named.append("'").append(printable(key)).append("'");
  if (!t.isfinite().all().item<bool>()) fail(named + " holds NaN or infinite values");
  const at::Tensor flat = t.flatten();
  const double largest = flat[flat.abs().argmax()].item<double>();  // the value of the largest magnitude
  if (std::abs(largest) > std::numeric_limits<float>::max()) {
    char value[32];
    std::snprintf(value, sizeof value, "%.3g", largest);
    fail(named + " holds " + value + ", beyond float32's range (the model computes in float32)");
  }
}

}  // namespace condbench::detail
