#include "predict/shape_folding.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "predict/einsum.h"
#include "predict/onnx_checks.h"
#include "predict/onnx_proto.h"

namespace footprint::predict {
namespace {

using onnx::TensorProto;

// Shape-like values only: nothing large is ever materialised.
constexpr size_t kMaxElements = 64;
// Each round folds what the last inference made known; a transformer's layers need one each.
constexpr int kMaxRounds = 256;

// A small tensor of integral values, row-major (floats too, while they hold whole numbers:
// shape arithmetic casts to float and back).
struct Value {
  std::vector<int64_t> v;
  std::vector<int64_t> dims;  // empty: a scalar
  int32_t type = TensorProto::INT64;
  size_t size() const { return v.size(); }
  bool scalar() const { return dims.empty(); }
  bool vector() const { return dims.size() == 1; }
};

// A 1-D value of `type`.
Value Vector(std::vector<int64_t> v, int32_t type = TensorProto::INT64) {
  const auto n = static_cast<int64_t>(v.size());
  return Value{std::move(v), {n}, type};
}

// The elements of a tensor of `dims`, where they are at most kMaxElements: none for a negative
// dimension, and none where the dimensions other than 0 multiply to more (an empty tensor of
// dimensions [0, 2^40] would make loops over its other dimensions run for ever).
template <typename Dims>
std::optional<size_t> SmallCount(const Dims& dims) {
  size_t n = 1, extent = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    const auto factor = static_cast<size_t>(std::max<int64_t>(d, 1));
    if (extent > kMaxElements / factor) return std::nullopt;
    extent *= factor;
    n *= static_cast<size_t>(d);
  }
  return n;
}

bool Supported(int32_t type) {
  return type == TensorProto::INT64 || type == TensorProto::INT32 || type == TensorProto::BOOL ||
         type == TensorProto::FLOAT || type == TensorProto::DOUBLE;
}

bool Floating(int32_t type) { return type == TensorProto::FLOAT || type == TensorProto::DOUBLE; }

// An element as an int64: integers as they are; a float only when it is a whole number well
// inside int64's range (not the -inf or -3.4e38 of an attention mask).
template <typename T>
bool Append(T x, std::vector<int64_t>& out) {
  if constexpr (std::is_floating_point_v<T>) {
    const auto d = static_cast<double>(x);
    if (!std::isfinite(d) || std::fabs(d) >= 9e18 || d != std::trunc(d)) return false;
  }
  out.push_back(static_cast<int64_t>(x));
  return true;
}

template <typename T>
bool ReadRaw(const TensorProto& t, size_t n, std::vector<int64_t>& out) {
  if (t.raw_data().size() != n * sizeof(T)) return false;
  for (size_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, t.raw_data().data() + i * sizeof(T), sizeof(T));
    if (!Append(x, out)) return false;
  }
  return true;
}

template <typename Field>
bool ReadField(const Field& field, size_t n, std::vector<int64_t>& out) {
  if (static_cast<size_t>(field.size()) != n) return false;
  for (auto x : field) {
    if (!Append(x, out)) return false;
  }
  return true;
}

std::optional<Value> FromTensor(const TensorProto& t) {
  if (!Supported(t.data_type())) return std::nullopt;
  const std::optional<size_t> count = SmallCount(t.dims());
  if (!count) return std::nullopt;
  const size_t n = *count;
  Value out{{}, {t.dims().begin(), t.dims().end()}, t.data_type()};
  const bool raw = t.has_raw_data();
  bool ok = false;
  switch (t.data_type()) {
    case TensorProto::INT64:
      ok = raw ? ReadRaw<int64_t>(t, n, out.v) : ReadField(t.int64_data(), n, out.v);
      break;
    case TensorProto::INT32:
      ok = raw ? ReadRaw<int32_t>(t, n, out.v) : ReadField(t.int32_data(), n, out.v);
      break;
    case TensorProto::BOOL:
      ok = raw ? ReadRaw<uint8_t>(t, n, out.v) : ReadField(t.int32_data(), n, out.v);
      break;
    case TensorProto::FLOAT:
      ok = raw ? ReadRaw<float>(t, n, out.v) : ReadField(t.float_data(), n, out.v);
      break;
    case TensorProto::DOUBLE:
      ok = raw ? ReadRaw<double>(t, n, out.v) : ReadField(t.double_data(), n, out.v);
      break;
  }
  if (!ok) return std::nullopt;
  return out;
}

TensorProto ToTensor(const Value& value) {
  TensorProto t;
  t.set_data_type(value.type);
  for (int64_t d : value.dims) t.add_dims(d);
  for (int64_t x : value.v) {
    switch (value.type) {
      case TensorProto::INT64:
        t.add_int64_data(x);
        break;
      case TensorProto::FLOAT:
        t.add_float_data(static_cast<float>(x));
        break;
      case TensorProto::DOUBLE:
        t.add_double_data(static_cast<double>(x));
        break;
      default:  // INT32, BOOL
        t.add_int32_data(static_cast<int32_t>(x));
    }
  }
  return t;
}

// The values every initializer and Constant node holds, where they are small integral tensors.
std::unordered_map<std::string, Value> Constants(const onnx::GraphProto& g) {
  std::unordered_map<std::string, Value> values;
  for (const auto& init : g.initializer()) {
    if (auto v = FromTensor(init)) values[init.name()] = *v;
  }
  for (const auto& node : g.node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1) continue;
    std::optional<Value> v;
    if (const auto* t = Attribute(node, "value")) v = FromTensor(t->t());
    if (const auto* i = Attribute(node, "value_int")) v = Value{{i->i()}, {}};
    if (const auto* is = Attribute(node, "value_ints");
        is && static_cast<size_t>(is->ints_size()) <= kMaxElements) {
      v = Vector({is->ints().begin(), is->ints().end()});
    }
    if (v) values[node.output(0)] = *v;
  }
  return values;
}

// An elementwise operator over two values: equal shapes, or one side of one element whose
// rank is not above the other's (numpy's broadcasting, short of the general case). None on
// overflow, a zero divisor, or a float quotient that is not a whole number. `fmod`: Mod's
// attribute (the dividend's sign, as C's %, instead of the divisor's).
std::optional<Value> Binary(const std::string& op, const Value& a, const Value& b,
                            bool fmod = false) {
  const Value* shape = nullptr;
  if (a.dims == b.dims) {
    shape = &a;
  } else if (a.size() == 1 && a.dims.size() <= b.dims.size()) {
    shape = &b;
  } else if (b.size() == 1 && b.dims.size() <= a.dims.size()) {
    shape = &a;
  }
  if (shape == nullptr || a.size() == 0 || b.size() == 0) return std::nullopt;
  Value out{{}, shape->dims, op == "Equal" ? TensorProto::BOOL : a.type};
  for (size_t i = 0; i < shape->size(); ++i) {
    const int64_t x = a.v[a.size() == 1 ? 0 : i], y = b.v[b.size() == 1 ? 0 : i];
    int64_t r = 0;
    if (op == "Add"   ? __builtin_add_overflow(x, y, &r)
        : op == "Sub" ? __builtin_sub_overflow(x, y, &r)
        : op == "Mul" ? __builtin_mul_overflow(x, y, &r)
                      : false) {
      return std::nullopt;
    }
    if (op == "Equal") {
      r = x == y;
    } else if (op == "Mod" || op == "Div") {
      if (y == 0 || (y == -1 && x == INT64_MIN)) return std::nullopt;
      if (op == "Mod") {
        r = fmod || x % y == 0 || (x % y < 0) == (y < 0) ? x % y : x % y + y;
      } else {  // integers truncate; a float quotient must stay a whole number
        if (Floating(a.type) && x % y != 0) return std::nullopt;
        r = x / y;
      }
    }
    out.v.push_back(r);
  }
  return out;
}

// Numpy's slice data[start:end:step] along `axis`.
std::optional<Value> Slice(const Value& data, int64_t axis, int64_t start, int64_t end,
                           int64_t step) {
  const auto rank = static_cast<int64_t>(data.dims.size());
  if (axis < 0) axis += rank;
  if (step == 0 || axis < 0 || axis >= rank) return std::nullopt;
  const int64_t n = data.dims[axis];
  auto clamp = [&](int64_t i, int64_t low, int64_t high) {
    if (i < 0) i += n;
    return std::clamp(i, low, high);
  };
  std::vector<int64_t> picked;
  const int64_t first = step > 0 ? clamp(start, 0, n) : clamp(start, -1, n - 1);
  const int64_t last = step > 0 ? clamp(end, 0, n) : clamp(end, -1, n - 1);
  for (int64_t i = first; step > 0 ? i < last : i > last;) {
    picked.push_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dims[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= data.dims[d];
  Value out{{}, data.dims, data.type};
  out.dims[axis] = static_cast<int64_t>(picked.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i : picked) {
      for (int64_t k = 0; k < inner; ++k) out.v.push_back(data.v[(o * n + i) * inner + k]);
    }
  }
  return out;
}

// Reshape's target shape: 0 copies the input's dimension (unless `allow_zero`), one -1 takes
// what is left.
std::optional<std::vector<int64_t>> ReshapeDims(const Value& data, const Value& shape,
                                                bool allow_zero) {
  std::vector<int64_t> dims;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape.v[i];
    if (d == 0 && !allow_zero && i < data.dims.size()) d = data.dims[i];
    if (d == -1) {
      if (inferred >= 0) return std::nullopt;
      inferred = static_cast<int64_t>(i);
    } else if (d < 0) {
      return std::nullopt;
    } else if (__builtin_mul_overflow(known, d, &known)) {
      return std::nullopt;
    }
    dims.push_back(d);
  }
  const auto total = static_cast<int64_t>(data.size());
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) return std::nullopt;
    dims[inferred] = total / known;
  } else if (known != total) {
    return std::nullopt;
  }
  return dims;
}

std::optional<Value> Transpose(const Value& x, std::vector<int64_t> perm) {
  const size_t rank = x.dims.size();
  if (perm.empty()) {
    for (size_t i = rank; i > 0; --i) perm.push_back(static_cast<int64_t>(i - 1));
  }
  if (perm.size() != rank) return std::nullopt;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) return std::nullopt;
    seen[p] = true;
  }
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.dims[d];
  Value out{{}, {}, x.type};
  for (int64_t p : perm) out.dims.push_back(x.dims[p]);
  std::vector<int64_t> index(rank, 0);  // over the output, row-major
  for (size_t n = 0; n < x.size(); ++n) {
    int64_t from = 0;
    for (size_t d = 0; d < rank; ++d) from += index[d] * strides[perm[d]];
    out.v.push_back(x.v[from]);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out.dims[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// Whether input `i` of `node` is given (an optional one may be left out or named "").
bool Given(const onnx::NodeProto& node, int i) {
  return i < node.input_size() && !node.input(i).empty();
}

// Unsqueeze's and Squeeze's axes, from 0: the second input (opset 13) or the attribute; none
// when the input is given but its value unknown, or an axis is repeated or out of range.
std::optional<std::vector<int64_t>> Axes(const onnx::NodeProto& node, const Value* input,
                                         int64_t rank) {
  if (Given(node, 1) && !input) return std::nullopt;
  std::vector<int64_t> axes = input ? input->v : IntsAttribute(node, "axes");
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

// The known values of a node's inputs: null for one left out, named "" or not known.
class KnownInputs {
 public:
  KnownInputs(const onnx::NodeProto& node, const std::unordered_map<std::string, Value>& values)
      : node_(node), values_(values) {}
  const Value* operator()(int i) const {
    if (i >= node_.input_size() || node_.input(i).empty()) return nullptr;
    auto it = values_.find(node_.input(i));
    return it == values_.end() ? nullptr : &it->second;
  }

 private:
  const onnx::NodeProto& node_;
  const std::unordered_map<std::string, Value>& values_;
};

// Shape and Size, from the input's shape as inference gave it.
std::optional<Value> EvaluateShapeOf(const onnx::NodeProto& node,
                                     const std::unordered_map<std::string, Tensor>& tensors) {
  auto it = node.input_size() > 0 ? tensors.find(node.input(0)) : tensors.end();
  if (it == tensors.end() || !it->second.known || it->second.dims.size() > kMaxElements) {
    return std::nullopt;
  }
  const std::vector<int64_t>& dims = it->second.dims;
  if (node.op_type() == "Size") {
    int64_t n = 1;
    for (int64_t d : dims) {
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
    }
    return Value{{n}, {}};
  }
  return Slice(Vector(dims), 0, IntAttribute(node, "start", 0),
               IntAttribute(node, "end", static_cast<int64_t>(dims.size())), 1);
}

std::optional<Value> EvaluateConstantOfShape(const onnx::NodeProto& node, const Value* shape) {
  const onnx::AttributeProto* fill = Attribute(node, "value");
  const std::optional<Value> element =
      fill ? FromTensor(fill->t()) : Value{{0}, {1}, TensorProto::FLOAT};
  const std::optional<size_t> n = shape ? SmallCount(shape->v) : std::nullopt;
  if (!n || !element || element->size() != 1) return std::nullopt;
  return Value{std::vector<int64_t>(*n, element->v[0]), shape->v, element->type};
}

std::optional<Value> EvaluateCast(const onnx::NodeProto& node, const Value& x) {
  Value out = x;
  out.type = static_cast<int32_t>(IntAttribute(node, "to", 0));
  if (!Supported(out.type)) return std::nullopt;
  if (out.type == TensorProto::BOOL) {
    for (int64_t& b : out.v) b = b != 0;
  }
  return out;
}

// Unsqueeze and Squeeze: the values kept, the dimensions of 1 added or removed.
std::optional<Value> EvaluateSqueeze(const onnx::NodeProto& node, const Value& x,
                                     const Value* given) {
  const bool unsqueeze = node.op_type() == "Unsqueeze";
  // Unsqueeze's axes index its output, whose rank is the input's plus one per axis.
  const size_t added = unsqueeze ? (given ? given->size() : IntsAttribute(node, "axes").size()) : 0;
  const auto rank = static_cast<int64_t>(x.dims.size() + added);
  const auto axes = Axes(node, given, rank);
  if (!axes || (!unsqueeze && !axes->empty() && axes->size() > x.dims.size())) {
    return std::nullopt;
  }
  Value out{x.v, {}, x.type};
  for (int64_t d = 0, from = 0; d < rank; ++d) {
    const bool listed = std::binary_search(axes->begin(), axes->end(), d);
    if (unsqueeze) {
      out.dims.push_back(listed ? 1 : x.dims[from++]);
    } else if (listed && x.dims[d] != 1) {
      return std::nullopt;  // Squeeze of a dimension that is not 1
    } else if (!(listed || (axes->empty() && x.dims[d] == 1))) {
      out.dims.push_back(x.dims[d]);
    }
  }
  return out;
}

std::optional<Value> EvaluateGather(const onnx::NodeProto& node, const Value& x,
                                    const Value* indices) {
  if (!indices || !x.vector() || IntAttribute(node, "axis", 0) != 0) return std::nullopt;
  Value out{{}, indices->dims, x.type};
  for (int64_t i : indices->v) {
    if (i < 0) i += static_cast<int64_t>(x.size());
    if (i < 0 || i >= static_cast<int64_t>(x.size())) return std::nullopt;
    out.v.push_back(x.v[i]);
  }
  return out;
}

std::optional<Value> EvaluateConcat(const onnx::NodeProto& node, const KnownInputs& in,
                                    int32_t type) {
  std::vector<int64_t> all;
  for (int i = 0; i < node.input_size(); ++i) {
    const Value* part = in(i);
    if (!part || !part->vector()) return std::nullopt;
    all.insert(all.end(), part->v.begin(), part->v.end());
  }
  if (all.size() > kMaxElements) return std::nullopt;
  return Vector(std::move(all), type);
}

std::optional<Value> EvaluateSlice(const onnx::NodeProto& node, const Value& x,
                                   const KnownInputs& in) {
  const Value *starts = in(1), *ends = in(2), *axes = in(3), *steps = in(4);
  if ((Given(node, 3) && !axes) || (Given(node, 4) && !steps)) return std::nullopt;
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1 || (axes && axes->size() != 1) ||
      (steps && steps->size() != 1)) {
    return std::nullopt;
  }
  return Slice(x, axes ? axes->v[0] : 0, starts->v[0], ends->v[0], steps ? steps->v[0] : 1);
}

std::optional<Value> EvaluateRange(const Value& start, const Value* limit, const Value* delta) {
  if (!limit || !delta || start.size() != 1 || limit->size() != 1 || delta->size() != 1 ||
      delta->v[0] == 0) {
    return std::nullopt;
  }
  // Clamped before the cast: a count beyond int64's range would not convert.
  const double count =
      std::max(0.0, std::ceil((static_cast<double>(limit->v[0]) - static_cast<double>(start.v[0])) /
                              static_cast<double>(delta->v[0])));
  if (count > static_cast<double>(kMaxElements)) return std::nullopt;
  std::vector<int64_t> v;
  for (int64_t i = 0, at = start.v[0]; i < static_cast<int64_t>(count); ++i) {
    v.push_back(at);
    if (__builtin_add_overflow(at, delta->v[0], &at)) break;
  }
  return Vector(std::move(v), start.type);
}

std::optional<Value> EvaluateWhere(const Value& condition, const Value* a, const Value* b) {
  if (!a || !b) return std::nullopt;
  auto picked = Binary("Mul", condition, *a);  // for the broadcast shape; values set below
  if (!picked || (b->dims != picked->dims && b->size() != 1)) return std::nullopt;
  for (size_t i = 0; i < picked->size(); ++i) {
    const bool take_a = condition.v[condition.size() == 1 ? 0 : i] != 0;
    picked->v[i] = take_a ? a->v[a->size() == 1 ? 0 : i] : b->v[b->size() == 1 ? 0 : i];
  }
  picked->type = a->type;
  return picked;
}

// The value of `node`'s one output, where its inputs' values (or, for Shape and Size, their
// shapes, from `tensors`) are known.
std::optional<Value> Evaluate(const onnx::NodeProto& node,
                              const std::unordered_map<std::string, Value>& values,
                              const std::unordered_map<std::string, Tensor>& tensors) {
  const std::string& op = node.op_type();
  const KnownInputs in(node, values);
  if (op == "Shape" || op == "Size") return EvaluateShapeOf(node, tensors);
  if (op == "ConstantOfShape") return EvaluateConstantOfShape(node, in(0));
  const Value* x = in(0);
  if (!x) return std::nullopt;
  if (op == "Identity") return *x;
  if (op == "Cast") return EvaluateCast(node, *x);
  if (op == "Unsqueeze" || op == "Squeeze") return EvaluateSqueeze(node, *x, in(1));
  if (op == "Reshape") {
    const Value* shape = in(1);
    auto dims =
        shape ? ReshapeDims(*x, *shape, IntAttribute(node, "allowzero", 0) != 0) : std::nullopt;
    if (!dims) return std::nullopt;
    return Value{x->v, *dims, x->type};
  }
  if (op == "Transpose") return Transpose(*x, IntsAttribute(node, "perm"));
  if (op == "Gather") return EvaluateGather(node, *x, in(1));
  if (op == "Concat") return EvaluateConcat(node, in, x->type);
  if (op == "Slice") return EvaluateSlice(node, *x, in);
  if (op == "Range") return EvaluateRange(*x, in(1), in(2));
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Equal") {
    const Value* y = in(1);
    return y ? Binary(op, *x, *y, IntAttribute(node, "fmod", 0) != 0) : std::nullopt;
  }
  if (op == "Where") return EvaluateWhere(*x, in(1), in(2));
  return std::nullopt;
}

void ReplaceByConstant(onnx::NodeProto& node, const Value& value) {
  const std::string name = node.name(), output = node.output(0);
  node.Clear();
  node.set_op_type("Constant");
  node.set_name(name);
  node.add_output(output);
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = ToTensor(value);
}

// `model` without its weights: each initializer of more than kMaxElements keeps its name, type
// and shape but not its data (shape inference reads the data of small ones only).
onnx::ModelProto CopyWithoutWeights(onnx::ModelProto& model) {
  auto* initializers = model.mutable_graph()->mutable_initializer();
  google::protobuf::RepeatedPtrField<TensorProto> weights;
  weights.Swap(initializers);
  for (const TensorProto& w : weights) {
    TensorProto* light = initializers->Add();
    if (SmallCount(w.dims())) {
      *light = w;
      continue;
    }
    light->set_name(w.name());
    light->set_data_type(w.data_type());
    *light->mutable_dims() = w.dims();
  }
  onnx::ModelProto copy = model;
  initializers->Swap(&weights);  // the model's own initializers back
  return copy;
}

// Gives an Einsum's output its dimensions where its inputs have theirs (ONNX 1.12 infers the
// rank only, which leaves every later operator of MaxViT's attention without a shape); false
// when it had them or they cannot be told.
bool InferEinsumShape(onnx::GraphProto& g, const onnx::NodeProto& node,
                      const std::unordered_map<std::string, Tensor>& tensors) {
  const onnx::AttributeProto* equation = Attribute(node, "equation");
  auto known = tensors.find(node.output(0));
  if (!equation || (known != tensors.end() && known->second.known)) return false;
  std::vector<std::vector<int64_t>> dims;
  for (const std::string& name : node.input()) {
    auto it = tensors.find(name);
    if (it == tensors.end() || !it->second.known) return false;
    dims.push_back(it->second.dims);
  }
  const std::optional<EinsumWork> work = ReadEinsum(equation->s(), dims);
  if (!work) return false;
  onnx::ValueInfoProto* info = nullptr;
  for (auto& v : *g.mutable_value_info()) {
    if (v.name() == node.output(0)) info = &v;
  }
  if (info == nullptr) {
    info = g.add_value_info();
    info->set_name(node.output(0));
  }
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  if (!tensor->has_elem_type()) tensor->set_elem_type(TensorProto::FLOAT);
  tensor->mutable_shape()->clear_dim();
  for (int64_t d : work->output_dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
  return true;
}

}  // namespace

Result<onnx::ModelProto> InferShapesThroughShapeComputations(onnx::ModelProto& model) {
  const onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                            /*data_prop_val=*/true);
  const CheckedSchemas schemas;
  onnx::ModelProto copy = CopyWithoutWeights(model);
  onnx::GraphProto& g = *copy.mutable_graph();
  for (int round = 0; round < kMaxRounds; ++round) {
    onnx::shape_inference::InferShapes(copy, &schemas, options);
    if (!schemas.refusal().empty()) return InvalidArgument(schemas.refusal());
    const auto tensors = Tensors(g);
    std::unordered_map<std::string, Value> values = Constants(g);
    bool folded = false;
    for (onnx::NodeProto& node : *g.mutable_node()) {
      const bool standard = node.domain().empty() || node.domain() == "ai.onnx";
      if (!standard || node.op_type() == "Constant" || node.output_size() != 1) continue;
      if (node.op_type() == "Einsum") {
        folded = InferEinsumShape(g, node, tensors) || folded;
        continue;
      }
      if (auto value = Evaluate(node, values, tensors)) {
        values[node.output(0)] = *value;
        ReplaceByConstant(node, *value);
        folded = true;
      }
    }
    if (!folded) break;
  }
  return copy;
}

}  // namespace footprint::predict
