#include "io/pickle_reader.h"

#include <cstring>
#include <optional>
#include <unordered_map>

#include "io/byte_reader.h"
#include "rexnlu/error.h"

namespace rexnlu::io {

namespace {

using Kind = PickleValue::Kind;

// Every opcode of pickle protocols 0-5, for messages about the ones we refuse.
const char* opcode_name(uint8_t op) {
  switch (op) {
    case 0x28: return "MARK";          case 0x2e: return "STOP";           case 0x30: return "POP";
    case 0x31: return "POP_MARK";      case 0x32: return "DUP";            case 0x46: return "FLOAT";
    case 0x49: return "INT";           case 0x4a: return "BININT";         case 0x4b: return "BININT1";
    case 0x4c: return "LONG";          case 0x4d: return "BININT2";        case 0x4e: return "NONE";
    case 0x50: return "PERSID";        case 0x51: return "BINPERSID";      case 0x52: return "REDUCE";
    case 0x53: return "STRING";        case 0x54: return "BINSTRING";      case 0x55: return "SHORT_BINSTRING";
    case 0x56: return "UNICODE";       case 0x58: return "BINUNICODE";     case 0x61: return "APPEND";
    case 0x62: return "BUILD";         case 0x63: return "GLOBAL";         case 0x64: return "DICT";
    case 0x7d: return "EMPTY_DICT";    case 0x65: return "APPENDS";        case 0x67: return "GET";
    case 0x68: return "BINGET";        case 0x69: return "INST";           case 0x6a: return "LONG_BINGET";
    case 0x6c: return "LIST";          case 0x5d: return "EMPTY_LIST";     case 0x6f: return "OBJ";
    case 0x70: return "PUT";           case 0x71: return "BINPUT";         case 0x72: return "LONG_BINPUT";
    case 0x73: return "SETITEM";       case 0x74: return "TUPLE";          case 0x29: return "EMPTY_TUPLE";
    case 0x75: return "SETITEMS";      case 0x47: return "BINFLOAT";       case 0x80: return "PROTO";
    case 0x81: return "NEWOBJ";        case 0x82: return "EXT1";           case 0x83: return "EXT2";
    case 0x84: return "EXT4";          case 0x85: return "TUPLE1";         case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";        case 0x88: return "NEWTRUE";        case 0x89: return "NEWFALSE";
    case 0x8a: return "LONG1";         case 0x8b: return "LONG4";          case 0x42: return "BINBYTES";
    case 0x43: return "SHORT_BINBYTES"; case 0x8c: return "SHORT_BINUNICODE"; case 0x8d: return "BINUNICODE8";
    case 0x8e: return "BINBYTES8";     case 0x8f: return "EMPTY_SET";      case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";     case 0x92: return "NEWOBJ_EX";      case 0x93: return "STACK_GLOBAL";
    case 0x94: return "MEMOIZE";       case 0x95: return "FRAME";          case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";   case 0x98: return "READONLY_BUFFER";
    default: return "not a pickle opcode";
  }
}

std::string hex_byte(uint8_t b) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 0xf];
}

std::optional<DType> storage_dtype(const std::string& global) {
  static const std::pair<const char*, DType> kStorages[] = {
      {"torch.FloatStorage", DType::kF32}, {"torch.HalfStorage", DType::kF16},
      {"torch.BFloat16Storage", DType::kBF16}, {"torch.DoubleStorage", DType::kF64},
      {"torch.LongStorage", DType::kI64}, {"torch.IntStorage", DType::kI32},
      {"torch.ShortStorage", DType::kI16}, {"torch.CharStorage", DType::kI8},
      {"torch.ByteStorage", DType::kU8}, {"torch.BoolStorage", DType::kBool}};
  for (const auto& [name, dtype] : kStorages)
    if (global == name) return dtype;
  return std::nullopt;
}

constexpr const char* kOrderedDict = "collections.OrderedDict";
constexpr const char* kRebuildTensorV2 = "torch._utils._rebuild_tensor_v2";
constexpr const char* kRebuildParameter = "torch._utils._rebuild_parameter";

bool allowed_global(const std::string& name) {
  return name == kOrderedDict || name == kRebuildTensorV2 || name == kRebuildParameter ||
         storage_dtype(name).has_value();
}

// A state dict pickle needs about 20 values per tensor (a few thousand for RexUniNLU); the
// limit keeps a crafted pickle (30 MB of EMPTY_DICT, MARK or MEMOIZE opcodes) from filling memory.
constexpr size_t kMaxPickleValues = size_t{1} << 18;

std::string limit_message(const char* what) {
  return std::string("more than ") + std::to_string(kMaxPickleValues) + " " + what +
         " (the limit for a state dict pickle; not a torch.save checkpoint?)";
}

// The interpreter state for one pickle.
class Machine {
 public:
  Machine(std::span<const std::byte> bytes, const std::string& context,
          std::deque<PickleValue>& arena, std::map<std::string, TorchStorageRef>& storages)
      : in_(bytes, context), context_(context), arena_(arena), storages_(storages) {}

  const PickleValue* run(uint64_t* consumed);

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ModelError(context_ + ": byte " + std::to_string(op_pos_) + " (" + opcode_name(op_) + "): " + what);
  }
  uint64_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  PickleValue* pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    PickleValue* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PickleValue* top() {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<PickleValue*> pop_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    const uint64_t mark = marks_.back();
    marks_.pop_back();
    std::vector<PickleValue*> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }
  PickleValue* value(Kind kind) {
    if (arena_.size() >= kMaxPickleValues) fail(limit_message("values"));
    arena_.emplace_back().kind = kind;
    return &arena_.back();
  }
  PickleValue* integer(int64_t v) {
    PickleValue* p = value(Kind::kInt);
    p->integer = v;
    return p;
  }
  PickleValue* tuple(std::vector<PickleValue*> items) {
    PickleValue* p = value(Kind::kTuple);
    p->items = std::move(items);
    return p;
  }
  PickleValue* expect(PickleValue* v, Kind kind, const char* what) {
    if (v->kind != kind)
      fail(std::string(what) + " must be a " + kind_name(kind) + ", found a " + kind_name(v->kind));
    return v;
  }
  void memo_put(uint64_t index) { memo_[index] = top(); }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo index " + std::to_string(index) + " was never stored");
    stack_.push_back(it->second);
  }
  std::string line(const char* what) {  // a newline-terminated argument of GLOBAL
    std::string s;
    while (true) {
      char c = static_cast<char>(in_.u8(what));
      if (c == '\n') return s;
      if (s.size() >= 256) fail(std::string(what) + " longer than 256 characters");
      s += c;
    }
  }
  void push_global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    if (!allowed_global(full))
      fail("forbidden global '" + full +
           "' (only collections.OrderedDict, torch._utils._rebuild_tensor_v2/_rebuild_parameter and "
           "torch.*Storage may appear in a checkpoint)");
    PickleValue* g = value(Kind::kGlobal);
    g->text = full;
    stack_.push_back(g);
  }
  std::vector<int64_t> int_tuple(PickleValue* v, const char* what) {
    expect(v, Kind::kTuple, what);
    std::vector<int64_t> out;
    for (PickleValue* item : v->items) {
      if (item->kind != Kind::kInt) fail(std::string(what) + " must hold integers, found a " + kind_name(item->kind));
      out.push_back(item->integer);
    }
    return out;
  }
  void set_items(PickleValue* dict, const std::vector<PickleValue*>& kv) {
    expect(dict, Kind::kDict, "the target of SETITEM(S)");
    if (kv.size() % 2 != 0) fail("odd number of items for a dict");
    dict->items.insert(dict->items.end(), kv.begin(), kv.end());
  }
  void persistent_load();
  void reduce();
  void build();

  ByteReader in_;
  const std::string& context_;
  std::deque<PickleValue>& arena_;
  std::map<std::string, TorchStorageRef>& storages_;
  std::vector<PickleValue*> stack_;
  std::vector<uint64_t> marks_;
  std::unordered_map<uint64_t, PickleValue*> memo_;
  uint64_t op_pos_ = 0;
  uint8_t op_ = 0;
};

// ('storage', torch.XStorage, key, location, numel[, view_metadata]) -> a storage reference.
void Machine::persistent_load() {
  PickleValue* pid = expect(pop(), Kind::kTuple, "persistent id");
  const auto& f = pid->items;
  if (f.size() != 5 && f.size() != 6) fail("persistent id must have 5 or 6 fields, found " + std::to_string(f.size()));
  if (f[0]->kind != Kind::kString || f[0]->text != "storage") fail("persistent id is not a 'storage' reference");
  expect(f[1], Kind::kGlobal, "persistent id storage type");
  auto dtype = storage_dtype(f[1]->text);
  if (!dtype) fail("'" + f[1]->text + "' is not a storage type");
  expect(f[2], Kind::kString, "storage key");
  expect(f[3], Kind::kString, "storage location");
  expect(f[4], Kind::kInt, "storage size");
  if (f[4]->integer < 0) fail("negative storage size");
  if (f.size() == 6 && f[5]->kind != Kind::kNone) fail("storage views (legacy view_metadata) are not supported");

  TorchStorageRef ref{f[2]->text, *dtype, f[4]->integer};
  auto [it, inserted] = storages_.emplace(ref.key, ref);
  if (!inserted && (it->second.dtype != ref.dtype || it->second.numel != ref.numel))
    fail("storage '" + ref.key + "' is referenced with two different types or sizes");
  PickleValue* s = value(Kind::kStorage);
  s->storage = ref;
  stack_.push_back(s);
}

void Machine::reduce() {
  PickleValue* args = expect(pop(), Kind::kTuple, "REDUCE arguments");
  PickleValue* callable = expect(pop(), Kind::kGlobal, "REDUCE callable");
  const std::string& fn = callable->text;
  const auto& a = args->items;
  if (fn == kOrderedDict) {
    if (!a.empty()) fail("collections.OrderedDict called with arguments");
    stack_.push_back(value(Kind::kDict));
  } else if (fn == kRebuildTensorV2) {
    // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    if (a.size() != 6 && a.size() != 7) fail("_rebuild_tensor_v2 expects 6 or 7 arguments, got " + std::to_string(a.size()));
    PickleValue* t = value(Kind::kTensor);
    t->tensor.storage_key = expect(a[0], Kind::kStorage, "tensor storage")->storage.key;
    t->tensor.dtype = a[0]->storage.dtype;
    t->tensor.storage_offset = expect(a[1], Kind::kInt, "storage offset")->integer;
    t->tensor.shape = int_tuple(a[2], "tensor size");
    t->tensor.stride = int_tuple(a[3], "tensor stride");
    expect(a[4], Kind::kBool, "requires_grad");
    stack_.push_back(t);
  } else if (fn == kRebuildParameter) {
    // (data, requires_grad, backward_hooks): a Parameter is its data tensor for us.
    if (a.size() != 3) fail("_rebuild_parameter expects 3 arguments, got " + std::to_string(a.size()));
    stack_.push_back(expect(a[0], Kind::kTensor, "parameter data"));
  } else {
    fail("global '" + fn + "' cannot be called");
  }
}

// BUILD sets attributes from a state; torch uses it only to attach `_metadata` to the state
// dict, which we do not need.
void Machine::build() {
  PickleValue* state = pop();
  PickleValue* target = top();
  if (target->kind != Kind::kDict) fail(std::string("BUILD on a ") + kind_name(target->kind) + " is not supported");
  if (state->kind != Kind::kDict && state->kind != Kind::kNone && state->kind != Kind::kTuple)
    fail(std::string("BUILD state must be a dict, found a ") + kind_name(state->kind));
}

const PickleValue* Machine::run(uint64_t* consumed) {
  while (true) {
    if (stack_.size() > kMaxPickleValues) fail(limit_message("stack entries"));
    if (marks_.size() > kMaxPickleValues) fail(limit_message("MARKs"));
    if (memo_.size() > kMaxPickleValues) fail(limit_message("memo entries"));
    op_pos_ = in_.pos();
    op_ = 0;
    op_ = in_.u8("opcode");
    switch (op_) {
      case 0x80: {  // PROTO
        const uint8_t proto = in_.u8("protocol");
        if (proto > 5) fail("unknown pickle protocol " + std::to_string(proto));
        break;
      }
      case 0x95: {  // FRAME: a length hint only
        const uint64_t len = in_.u64("frame length");
        if (len > in_.remaining()) fail("frame of " + std::to_string(len) + " bytes runs past the end (truncated)");
        break;
      }
      case 0x2e: {  // STOP
        if (!marks_.empty() || stack_.size() != 1) fail("pickle ends with a malformed stack");
        if (consumed) *consumed = in_.pos();
        return stack_.back();
      }
      case 0x28: marks_.push_back(stack_.size()); break;  // MARK
      case 0x7d: stack_.push_back(value(Kind::kDict)); break;
      case 0x5d: stack_.push_back(value(Kind::kList)); break;
      case 0x29: stack_.push_back(tuple({})); break;
      case 0x4e: stack_.push_back(value(Kind::kNone)); break;
      case 0x88:
      case 0x89: {
        PickleValue* b = value(Kind::kBool);
        b->boolean = op_ == 0x88;
        stack_.push_back(b);
        break;
      }
      case 0x71: memo_put(in_.u8("memo index")); break;            // BINPUT
      case 0x72: memo_put(in_.u32("memo index")); break;           // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); break;                    // MEMOIZE
      case 0x68: memo_get(in_.u8("memo index")); break;            // BINGET
      case 0x6a: memo_get(in_.u32("memo index")); break;           // LONG_BINGET
      case 0x58:                                                   // BINUNICODE
      case 0x8c: {                                                 // SHORT_BINUNICODE
        const uint64_t len = op_ == 0x58 ? in_.u32("string length") : in_.u8("string length");
        PickleValue* s = value(Kind::kString);
        s->text = std::string(in_.chars(len, "string"));
        stack_.push_back(s);
        break;
      }
      case 0x4a: stack_.push_back(integer(static_cast<int32_t>(in_.u32("int")))); break;  // BININT
      case 0x4b: stack_.push_back(integer(in_.u8("int"))); break;                         // BININT1
      case 0x4d: stack_.push_back(integer(in_.u16("int"))); break;                        // BININT2
      case 0x8a: {  // LONG1: n-byte little-endian two's complement
        const uint8_t n = in_.u8("long length");
        auto bytes = in_.bytes(n, "long");
        if (n > 8) {
          PickleValue* big = value(Kind::kBigInt);
          big->text.assign(reinterpret_cast<const char*>(bytes.data()), n);
          stack_.push_back(big);
          break;
        }
        uint64_t v = 0;
        for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<uint64_t>(bytes[static_cast<size_t>(i)]);
        if (n > 0 && n < 8 && (std::to_integer<uint8_t>(bytes[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
        stack_.push_back(integer(static_cast<int64_t>(v)));
        break;
      }
      case 0x47: {  // BINFLOAT: big-endian IEEE double
        auto b = in_.bytes(8, "float");
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | std::to_integer<uint64_t>(b[static_cast<size_t>(i)]);
        PickleValue* f = value(Kind::kFloat);
        std::memcpy(&f->real, &bits, sizeof bits);
        stack_.push_back(f);
        break;
      }
      case 0x74: stack_.push_back(tuple(pop_mark())); break;  // TUPLE
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        std::vector<PickleValue*> items(op_ - 0x84u);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        stack_.push_back(tuple(std::move(items)));
        break;
      }
      case 0x64: {  // DICT
        PickleValue* d = value(Kind::kDict);
        set_items(d, pop_mark());
        stack_.push_back(d);
        break;
      }
      case 0x6c: {  // LIST
        PickleValue* l = value(Kind::kList);
        l->items = pop_mark();
        stack_.push_back(l);
        break;
      }
      case 0x63: {  // GLOBAL "module\nname\n"
        const std::string module = line("global module");
        const std::string name = line("global name");
        push_global(module, name);
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        PickleValue* name = expect(pop(), Kind::kString, "STACK_GLOBAL name");
        PickleValue* module = expect(pop(), Kind::kString, "STACK_GLOBAL module");
        push_global(module->text, name->text);
        break;
      }
      case 0x52: reduce(); break;
      case 0x62: build(); break;
      case 0x51: persistent_load(); break;
      case 0x73: {  // SETITEM
        PickleValue* v = pop();
        PickleValue* k = pop();
        set_items(top(), {k, v});
        break;
      }
      case 0x75: {  // SETITEMS
        auto kv = pop_mark();
        set_items(top(), kv);
        break;
      }
      case 0x61: {  // APPEND
        PickleValue* v = pop();
        expect(top(), Kind::kList, "the target of APPEND")->items.push_back(v);
        break;
      }
      case 0x65: {  // APPENDS
        auto items = pop_mark();
        PickleValue* l = expect(top(), Kind::kList, "the target of APPENDS");
        l->items.insert(l->items.end(), items.begin(), items.end());
        break;
      }
      default:
        fail("unsupported pickle opcode " + hex_byte(op_) + " (" + opcode_name(op_) +
             "); rexnlu reads only the opcodes torch.save emits for a state dict");
    }
  }
}

}  // namespace

const char* kind_name(PickleValue::Kind kind) {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kBigInt: return "big int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kTuple: return "tuple";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kGlobal: return "global";
    case Kind::kStorage: return "storage";
    case Kind::kTensor: return "tensor";
  }
  return "?";
}

const PickleValue* PickleReader::read(std::span<const std::byte> bytes, uint64_t* consumed) {
  Machine machine(bytes, context_, arena_, storages_);
  return machine.run(consumed);
}

}  // namespace rexnlu::io
