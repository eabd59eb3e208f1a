#include "engine/onnx/constant_evaluator.h"

#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/proto_tensor.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

namespace mantissa::onnx_import {

namespace {

using Shape = std::vector<std::int64_t>;
using Result = std::optional<std::vector<OnnxTensor>>;

std::int64_t product(const Shape& shape)
{
    return std::accumulate(shape.begin(), shape.end(), std::int64_t(1), std::multiplies<>());
}

// Whether a tensor of this shape is small enough to compute at import (and its element count
// does not overflow on the way).
bool fitsFolding(const Shape& shape)
{
    std::int64_t count = 1;
    for (std::int64_t dim : shape) {
        if (dim < 0 || (dim != 0 && count > kMaxFoldedElements / dim))
            return false;
        count *= dim;
    }
    return count <= kMaxFoldedElements;
}

bool isReal(const OnnxTensor& tensor) { return isFloatingPoint(tensor.type); }

std::size_t size(const OnnxTensor& tensor) { return isReal(tensor) ? tensor.floats.size() : tensor.ints.size(); }

// Element i as a double or an int64, whatever the tensor holds.
double realAt(const OnnxTensor& tensor, std::size_t i)
{
    return isReal(tensor) ? tensor.floats[i] : double(tensor.ints[i]);
}
std::int64_t intAt(const OnnxTensor& tensor, std::size_t i)
{
    return isReal(tensor) ? std::int64_t(tensor.floats[i]) : tensor.ints[i];
}

OnnxTensor emptyLike(ElementType type, Shape shape)
{
    OnnxTensor tensor;
    tensor.type = type;
    tensor.shape = std::move(shape);
    return tensor;
}

// Copies element i of `from` to the end of `to` (same type).
void appendElement(OnnxTensor& to, const OnnxTensor& from, std::size_t i)
{
    if (isReal(from))
        to.floats.push_back(from.floats[i]);
    else
        to.ints.push_back(from.ints[i]);
}

std::vector<std::int64_t> intsOf(const OnnxTensor& tensor)
{
    std::vector<std::int64_t> values;
    for (std::size_t i = 0; i < size(tensor); ++i)
        values.push_back(intAt(tensor, i));
    return values;
}

Shape stridesOf(const Shape& shape)
{
    Shape strides(shape.size(), 1);
    for (std::size_t d = shape.size(); d-- > 1;)
        strides[d - 1] = strides[d] * shape[d];
    return strides;
}

// numpy's multidirectional broadcasting; nullopt when the shapes do not broadcast.
std::optional<Shape> broadcastShape(const Shape& a, const Shape& b)
{
    const std::size_t rank = std::max(a.size(), b.size());
    Shape out(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        if (da != db && da != 1 && db != 1)
            return std::nullopt;
        out[i] = da == 1 ? db : da;
    }
    return out;
}

// For every element of `out` (row-major), the offset of the element of `in` broadcast to it.
std::vector<std::size_t> broadcastOffsets(const Shape& in, const Shape& out)
{
    const Shape inStrides = stridesOf(in);
    const std::size_t lead = out.size() - in.size();
    std::vector<std::size_t> offsets(std::size_t(product(out)));
    Shape index(out.size(), 0);
    for (std::size_t& offset : offsets) {
        offset = 0;
        for (std::size_t d = 0; d < in.size(); ++d)
            offset += std::size_t(in[d] == 1 ? 0 : index[lead + d] * inStrides[d]);
        for (std::size_t d = out.size(); d-- > 0;) {
            if (++index[d] < out[d])
                break;
            index[d] = 0;
        }
    }
    return offsets;
}

struct BinaryOp {
    std::function<std::int64_t(std::int64_t, std::int64_t)> onInts;
    std::function<double(double, double)> onReals;
    bool comparison = false; // the result is Bool
};

Result binary(const OnnxTensor& a, const OnnxTensor& b, const BinaryOp& op)
{
    // Values are kept as float: float64 arithmetic would not give float64's results.
    if (!op.comparison && (a.type == ElementType::Float64 || b.type == ElementType::Float64))
        return std::nullopt;
    const auto shape = broadcastShape(a.shape, b.shape);
    if (!shape || !fitsFolding(*shape))
        return std::nullopt;
    const bool reals = isReal(a) || isReal(b);
    // Logical operators and comparisons of Bool or integer tensors go through onReals: their
    // operands are small or 0 and 1 (compareInts keeps large int64 comparisons exact).
    const bool viaReals = reals || (op.comparison && !op.onInts);
    if (viaReals ? !op.onReals : !op.onInts)
        return std::nullopt;
    OnnxTensor out = emptyLike(op.comparison ? ElementType::Bool : a.type, *shape);
    const auto offsetsA = broadcastOffsets(a.shape, *shape);
    const auto offsetsB = broadcastOffsets(b.shape, *shape);
    for (std::size_t i = 0; i < offsetsA.size(); ++i) {
        if (viaReals) {
            const double value = op.onReals(realAt(a, offsetsA[i]), realAt(b, offsetsB[i]));
            if (op.comparison)
                out.ints.push_back(std::int64_t(value));
            else
                out.floats.push_back(float(value));
        } else {
            out.ints.push_back(op.onInts(a.ints[offsetsA[i]], b.ints[offsetsB[i]]));
        }
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

std::int64_t intAttribute(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback);

std::optional<BinaryOp> binaryOp(const std::string& op, const onnx::NodeProto& node)
{
    using I = std::int64_t;
    if (op == "Add")
        return BinaryOp{[](I x, I y) { return x + y; }, [](double x, double y) { return x + y; }};
    if (op == "Sub")
        return BinaryOp{[](I x, I y) { return x - y; }, [](double x, double y) { return x - y; }};
    if (op == "Mul")
        return BinaryOp{[](I x, I y) { return x * y; }, [](double x, double y) { return x * y; }};
    if (op == "Div")
        return BinaryOp{[&node](I x, I y) {
                            if (y == 0)
                                throw OnnxImportError("node '" + node.name() + "' (Div) divides integers by zero");
                            return x / y;
                        },
                        [](double x, double y) { return x / y; }};
    if (op == "Pow")
        return BinaryOp{nullptr, [](double x, double y) { return std::pow(x, y); }};
    if (op == "Max")
        return BinaryOp{[](I x, I y) { return std::max(x, y); }, [](double x, double y) { return std::max(x, y); }};
    if (op == "Min")
        return BinaryOp{[](I x, I y) { return std::min(x, y); }, [](double x, double y) { return std::min(x, y); }};
    if (op == "Mod") {
        // fmod=0 (integers only): the sign of the divisor, like Python's %; fmod=1: the sign of
        // the dividend, like C's.
        const bool cStyle = intAttribute(node, "fmod", 0) != 0;
        return BinaryOp{[&node, cStyle](I x, I y) {
                            if (y == 0)
                                throw OnnxImportError("node '" + node.name() + "' (Mod) divides integers by zero");
                            I r = x % y;
                            return !cStyle && r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
                        },
                        [](double x, double y) { return std::fmod(x, y); }};
    }
    const auto compare = [](auto predicate) {
        return BinaryOp{nullptr, [predicate](double x, double y) { return predicate(x, y) ? 1.0 : 0.0; }, true};
    };
    if (op == "Equal")
        return compare(std::equal_to<>());
    if (op == "Less")
        return compare(std::less<>());
    if (op == "Greater")
        return compare(std::greater<>());
    if (op == "LessOrEqual")
        return compare(std::less_equal<>());
    if (op == "GreaterOrEqual")
        return compare(std::greater_equal<>());
    if (op == "And")
        return compare([](double x, double y) { return x != 0 && y != 0; });
    if (op == "Or")
        return compare([](double x, double y) { return x != 0 || y != 0; });
    if (op == "Xor")
        return compare([](double x, double y) { return (x != 0) != (y != 0); });
    return std::nullopt;
}

// Comparisons of int64 values beyond 2^53 would round as doubles: compare the integers.
Result compareInts(const OnnxTensor& a, const OnnxTensor& b, const BinaryOp& op)
{
    BinaryOp exact = op;
    exact.onReals = nullptr;
    exact.onInts = [&op](std::int64_t x, std::int64_t y) {
        if (x == y)
            return std::int64_t(op.onReals(0, 0));
        return std::int64_t(op.onReals(x < y ? 0 : 1, x < y ? 1 : 0));
    };
    exact.comparison = false;
    auto result = binary(a, b, exact);
    if (result)
        (*result)[0].type = ElementType::Bool;
    return result;
}

Result unary(const std::string& op, const OnnxTensor& x)
{
    if (x.type == ElementType::Float64 && op != "Neg" && op != "Abs")
        return std::nullopt; // float64 kept as float: Sqrt and the like would round differently
    OnnxTensor out = emptyLike(x.type, x.shape);
    for (std::size_t i = 0; i < size(x); ++i) {
        if (op == "Not") {
            out.ints.push_back(intAt(x, i) == 0 ? 1 : 0);
            continue;
        }
        if (!isReal(x)) {
            const std::int64_t v = x.ints[i];
            if (op == "Neg")
                out.ints.push_back(-v);
            else if (op == "Abs")
                out.ints.push_back(v < 0 ? -v : v);
            else if (op == "Floor" || op == "Ceil")
                out.ints.push_back(v);
            else
                return std::nullopt;
            continue;
        }
        const double v = x.floats[i];
        if (op == "Neg")
            out.floats.push_back(float(-v));
        else if (op == "Abs")
            out.floats.push_back(float(std::fabs(v)));
        else if (op == "Sqrt")
            out.floats.push_back(float(std::sqrt(v)));
        else if (op == "Floor")
            out.floats.push_back(float(std::floor(v)));
        else if (op == "Ceil")
            out.floats.push_back(float(std::ceil(v)));
        else if (op == "Reciprocal")
            out.floats.push_back(float(1.0 / v));
        else
            return std::nullopt;
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

const onnx::AttributeProto* findAttribute(const onnx::NodeProto& node, const std::string& name)
{
    for (const onnx::AttributeProto& attribute : node.attribute()) {
        if (attribute.name() == name)
            return &attribute;
    }
    return nullptr;
}

std::int64_t intAttribute(const onnx::NodeProto& node, const std::string& name, std::int64_t fallback)
{
    const auto* attribute = findAttribute(node, name);
    return attribute ? attribute->i() : fallback;
}

std::optional<Shape> intsAttribute(const onnx::NodeProto& node, const std::string& name)
{
    const auto* attribute = findAttribute(node, name);
    if (!attribute)
        return std::nullopt;
    return Shape(attribute->ints().begin(), attribute->ints().end());
}

std::string where(const onnx::NodeProto& node) { return "node '" + node.name() + "' (" + node.op_type() + ")"; }

std::int64_t normaliseAxis(std::int64_t axis, std::size_t rank, const onnx::NodeProto& node)
{
    const std::int64_t r = std::int64_t(rank);
    if (axis < -r || axis >= r)
        throw OnnxImportError(where(node) + ": axis " + std::to_string(axis) + " is out of range for rank " +
                              std::to_string(rank));
    return axis < 0 ? axis + r : axis;
}

Result constantNode(const onnx::NodeProto& node)
{
    OnnxTensor out;
    if (const auto* value = findAttribute(node, "value"))
        out = tensorFromProto(value->t(), where(node));
    else if (const auto* f = findAttribute(node, "value_float"))
        out = OnnxTensor{{}, ElementType::Float32, {}, {f->f()}, {}};
    else if (const auto* fs = findAttribute(node, "value_floats"))
        out = OnnxTensor{{}, ElementType::Float32, {fs->floats_size()}, {fs->floats().begin(), fs->floats().end()}, {}};
    else if (const auto* i = findAttribute(node, "value_int"))
        out = OnnxTensor{{}, ElementType::Int64, {}, {}, {i->i()}};
    else if (const auto* is = findAttribute(node, "value_ints"))
        out = OnnxTensor{{}, ElementType::Int64, {is->ints_size()}, {}, {is->ints().begin(), is->ints().end()}};
    else
        throw OnnxImportError(where(node) + ": only dense numeric constants are supported (value, value_float(s), "
                                            "value_int(s)), not sparse or string ones");
    return std::vector<OnnxTensor>{std::move(out)};
}

Result cast(const onnx::NodeProto& node, const OnnxTensor& x)
{
    const auto to = ElementType(intAttribute(node, "to", 0));
    if (!canWriteToProto(to) || to == ElementType::String)
        return std::nullopt;
    OnnxTensor out = emptyLike(to, x.shape);
    for (std::size_t i = 0; i < size(x); ++i) {
        if (to == ElementType::Bool)
            out.ints.push_back(realAt(x, i) != 0 ? 1 : 0);
        else if (isFloatingPoint(to))
            out.floats.push_back(float(realAt(x, i)));
        else
            out.ints.push_back(intAt(x, i));
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

Result gather(const onnx::NodeProto& node, const OnnxTensor& data, const OnnxTensor& indices)
{
    if (data.shape.empty())
        return std::nullopt;
    const std::int64_t axis = normaliseAxis(intAttribute(node, "axis", 0), data.shape.size(), node);
    Shape shape(data.shape.begin(), data.shape.begin() + axis);
    shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
    shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
    if (!fitsFolding(shape))
        return std::nullopt;
    OnnxTensor out = emptyLike(data.type, shape);
    const std::int64_t outer = product(Shape(data.shape.begin(), data.shape.begin() + axis));
    const std::int64_t inner = product(Shape(data.shape.begin() + axis + 1, data.shape.end()));
    const std::int64_t extent = data.shape[std::size_t(axis)];
    for (std::int64_t o = 0; o < outer; ++o) {
        for (std::size_t k = 0; k < size(indices); ++k) {
            std::int64_t index = intAt(indices, k);
            if (index < -extent || index >= extent)
                throw OnnxImportError(where(node) + ": index " + std::to_string(index) +
                                      " is out of range for a dimension of " + std::to_string(extent));
            index = index < 0 ? index + extent : index;
            for (std::int64_t i = 0; i < inner; ++i)
                appendElement(out, data, std::size_t((o * extent + index) * inner + i));
        }
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

Result concat(const onnx::NodeProto& node, const std::vector<const OnnxTensor*>& inputs)
{
    const OnnxTensor& first = *inputs.front();
    if (first.shape.empty())
        return std::nullopt;
    const std::int64_t axis = normaliseAxis(intAttribute(node, "axis", 0), first.shape.size(), node);
    Shape shape = first.shape;
    shape[std::size_t(axis)] = 0;
    for (const OnnxTensor* input : inputs) {
        if (input->shape.size() != first.shape.size() || isReal(*input) != isReal(first))
            return std::nullopt;
        shape[std::size_t(axis)] += input->shape[std::size_t(axis)];
    }
    OnnxTensor out = emptyLike(first.type, shape);
    const std::int64_t outer = product(Shape(first.shape.begin(), first.shape.begin() + axis));
    for (std::int64_t o = 0; o < outer; ++o) {
        for (const OnnxTensor* input : inputs) {
            const std::int64_t chunk = product(Shape(input->shape.begin() + axis, input->shape.end()));
            for (std::int64_t i = 0; i < chunk; ++i)
                appendElement(out, *input, std::size_t(o * chunk + i));
        }
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

OnnxTensor withShape(const OnnxTensor& x, Shape shape)
{
    OnnxTensor out = x;
    out.shape = std::move(shape);
    return out;
}

// Axes from the attribute (before opset 13) or the second input (from 13).
std::optional<Shape> axesOf(const onnx::NodeProto& node, const std::vector<const OnnxTensor*>& inputs)
{
    if (inputs.size() > 1 && inputs[1])
        return intsOf(*inputs[1]);
    return intsAttribute(node, "axes");
}

Result unsqueeze(const onnx::NodeProto& node, const std::vector<const OnnxTensor*>& inputs)
{
    const OnnxTensor& x = *inputs[0];
    const auto axes = axesOf(node, inputs);
    if (!axes)
        return std::nullopt;
    const std::size_t rank = x.shape.size() + axes->size();
    std::vector<bool> inserted(rank, false);
    for (std::int64_t axis : *axes) {
        const auto d = std::size_t(normaliseAxis(axis, rank, node));
        if (inserted[d])
            throw OnnxImportError(where(node) + ": axis " + std::to_string(axis) + " is given twice");
        inserted[d] = true;
    }
    Shape shape;
    std::size_t next = 0;
    for (std::size_t d = 0; d < rank; ++d)
        shape.push_back(inserted[d] ? 1 : x.shape[next++]);
    return std::vector<OnnxTensor>{withShape(x, shape)};
}

Result squeeze(const onnx::NodeProto& node, const std::vector<const OnnxTensor*>& inputs)
{
    const OnnxTensor& x = *inputs[0];
    const auto axes = axesOf(node, inputs);
    std::vector<bool> removed(x.shape.size(), false);
    if (axes) {
        for (std::int64_t axis : *axes) {
            const auto d = std::size_t(normaliseAxis(axis, x.shape.size(), node));
            if (x.shape[d] != 1)
                throw OnnxImportError(where(node) + ": squeezes axis " + std::to_string(axis) + " of size " +
                                      std::to_string(x.shape[d]));
            removed[d] = true;
        }
    } else {
        for (std::size_t d = 0; d < x.shape.size(); ++d)
            removed[d] = x.shape[d] == 1;
    }
    Shape shape;
    for (std::size_t d = 0; d < x.shape.size(); ++d) {
        if (!removed[d])
            shape.push_back(x.shape[d]);
    }
    return std::vector<OnnxTensor>{withShape(x, shape)};
}

Result reshape(const onnx::NodeProto& node, const OnnxTensor& x, const OnnxTensor& target)
{
    Shape shape = intsOf(target);
    const bool allowZero = intAttribute(node, "allowzero", 0) != 0;
    std::optional<std::size_t> inferred;
    std::int64_t known = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 0 && !allowZero) {
            if (d >= x.shape.size())
                throw OnnxImportError(where(node) + ": copies dimension " + std::to_string(d) + " of a rank " +
                                      std::to_string(x.shape.size()) + " tensor");
            shape[d] = x.shape[d];
        }
        if (shape[d] < -1 || (shape[d] == -1 && inferred))
            throw OnnxImportError(where(node) + ": target shape " + std::to_string(shape[d]) + " at dimension " +
                                  std::to_string(d) + " (only one -1 is allowed, no other negative size)");
        if (shape[d] == -1)
            inferred = d;
        else
            known *= shape[d];
    }
    if (inferred)
        shape[*inferred] = known == 0 ? 0 : x.elementCount() / known;
    if (product(shape) != x.elementCount())
        throw OnnxImportError(where(node) + ": cannot reshape " + std::to_string(x.elementCount()) + " values to " +
                              std::to_string(product(shape)));
    return std::vector<OnnxTensor>{withShape(x, shape)};
}

Result flatten(const onnx::NodeProto& node, const OnnxTensor& x)
{
    const std::int64_t rank = std::int64_t(x.shape.size());
    std::int64_t axis = intAttribute(node, "axis", 1);
    axis = axis < 0 ? axis + rank : axis;
    const std::int64_t outer =
        product(Shape(x.shape.begin(), x.shape.begin() + std::clamp<std::int64_t>(axis, 0, rank)));
    return std::vector<OnnxTensor>{withShape(x, {outer, outer == 0 ? 0 : x.elementCount() / outer})};
}

// A shape given as data: refuses negative sizes, and sizes whose product is beyond what the
// folding computes.
Shape shapeFromData(const onnx::NodeProto& node, const OnnxTensor& shapeTensor)
{
    Shape shape = intsOf(shapeTensor);
    for (std::int64_t dim : shape) {
        if (dim < 0)
            throw OnnxImportError(where(node) + ": a negative size " + std::to_string(dim) + " in its shape input");
    }
    return shape;
}

Result constantOfShape(const onnx::NodeProto& node, const OnnxTensor& shapeTensor)
{
    const Shape shape = shapeFromData(node, shapeTensor);
    if (!fitsFolding(shape))
        return std::nullopt;
    OnnxTensor fill{{}, ElementType::Float32, {1}, {0.0f}, {}};
    if (const auto* value = findAttribute(node, "value"))
        fill = tensorFromProto(value->t(), where(node));
    if (!canWriteToProto(fill.type) || size(fill) != 1)
        return std::nullopt;
    OnnxTensor out = emptyLike(fill.type, shape);
    for (std::int64_t i = 0; i < product(shape); ++i)
        appendElement(out, fill, 0);
    return std::vector<OnnxTensor>{std::move(out)};
}

Result range(const onnx::NodeProto& node, const OnnxTensor& start, const OnnxTensor& limit, const OnnxTensor& delta)
{
    if (size(start) != 1 || size(limit) != 1 || size(delta) != 1 || realAt(delta, 0) == 0)
        throw OnnxImportError(where(node) + ": start, limit and delta must be scalars and delta not zero");
    const double count = std::ceil((realAt(limit, 0) - realAt(start, 0)) / realAt(delta, 0));
    if (!(count <= double(kMaxFoldedElements))) // also NaN
        return std::nullopt;
    const std::int64_t n = std::max<std::int64_t>(0, std::int64_t(count));
    OnnxTensor out = emptyLike(start.type, {n});
    for (std::int64_t i = 0; i < n; ++i) {
        if (isReal(start))
            out.floats.push_back(float(realAt(start, 0) + double(i) * realAt(delta, 0)));
        else
            out.ints.push_back(start.ints[0] + i * delta.ints[0]);
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

Result expand(const onnx::NodeProto& node, const OnnxTensor& x, const OnnxTensor& shapeTensor)
{
    const auto shape = broadcastShape(x.shape, shapeFromData(node, shapeTensor));
    if (!shape || !fitsFolding(*shape))
        return std::nullopt;
    OnnxTensor out = emptyLike(x.type, *shape);
    for (std::size_t offset : broadcastOffsets(x.shape, *shape))
        appendElement(out, x, offset);
    return std::vector<OnnxTensor>{std::move(out)};
}

Result whereNode(const OnnxTensor& condition, const OnnxTensor& x, const OnnxTensor& y)
{
    auto shape = broadcastShape(condition.shape, x.shape);
    if (shape)
        shape = broadcastShape(*shape, y.shape);
    if (!shape || !fitsFolding(*shape) || isReal(x) != isReal(y))
        return std::nullopt;
    OnnxTensor out = emptyLike(x.type, *shape);
    const auto c = broadcastOffsets(condition.shape, *shape);
    const auto a = broadcastOffsets(x.shape, *shape);
    const auto b = broadcastOffsets(y.shape, *shape);
    for (std::size_t i = 0; i < c.size(); ++i) {
        if (intAt(condition, c[i]) != 0)
            appendElement(out, x, a[i]);
        else
            appendElement(out, y, b[i]);
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

Result slice(const onnx::NodeProto& node, const std::vector<const OnnxTensor*>& inputs, std::int64_t opset)
{
    const OnnxTensor& x = *inputs[0];
    Shape starts, ends, axes, steps;
    if (opset < 10) {
        starts = intsAttribute(node, "starts").value_or(Shape{});
        ends = intsAttribute(node, "ends").value_or(Shape{});
        axes = intsAttribute(node, "axes").value_or(Shape{});
    } else {
        if (inputs.size() < 3 || !inputs[1] || !inputs[2])
            return std::nullopt;
        starts = intsOf(*inputs[1]);
        ends = intsOf(*inputs[2]);
        if (inputs.size() > 3 && inputs[3])
            axes = intsOf(*inputs[3]);
        if (inputs.size() > 4 && inputs[4])
            steps = intsOf(*inputs[4]);
    }
    const std::size_t rank = x.shape.size();
    if (axes.empty()) {
        for (std::size_t d = 0; d < starts.size(); ++d)
            axes.push_back(std::int64_t(d));
    }
    if (steps.empty())
        steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        throw OnnxImportError(where(node) + ": starts, ends, axes and steps differ in length");
    Shape begin(rank, 0), step(rank, 1), count = x.shape;
    for (std::size_t k = 0; k < starts.size(); ++k) {
        const auto d = std::size_t(normaliseAxis(axes[k], rank, node));
        const std::int64_t extent = x.shape[d];
        if (steps[k] == 0 || steps[k] == std::numeric_limits<std::int64_t>::min())
            throw OnnxImportError(where(node) + ": a step of " + std::to_string(steps[k]));
        std::int64_t s = starts[k] < 0 ? starts[k] + extent : starts[k];
        std::int64_t e = ends[k] < 0 ? ends[k] + extent : ends[k];
        if (steps[k] > 0) {
            s = std::clamp<std::int64_t>(s, 0, extent);
            e = std::clamp<std::int64_t>(e, 0, extent);
            count[d] = e > s ? (e - s - 1) / steps[k] + 1 : 0;
        } else {
            s = std::clamp<std::int64_t>(s, 0, extent - 1);
            e = std::clamp<std::int64_t>(e, -1, extent - 1);
            count[d] = s > e ? (s - e - 1) / -steps[k] + 1 : 0;
        }
        begin[d] = s;
        step[d] = steps[k];
    }
    OnnxTensor out = emptyLike(x.type, count);
    const Shape strides = stridesOf(x.shape);
    Shape index(rank, 0);
    for (std::int64_t flat = 0; flat < product(count); ++flat) {
        std::int64_t offset = 0;
        for (std::size_t d = 0; d < rank; ++d)
            offset += (begin[d] + index[d] * step[d]) * strides[d];
        appendElement(out, x, std::size_t(offset));
        for (std::size_t d = rank; d-- > 0;) {
            if (++index[d] < count[d])
                break;
            index[d] = 0;
        }
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

Result transpose(const onnx::NodeProto& node, const OnnxTensor& x)
{
    const std::size_t rank = x.shape.size();
    Shape perm = intsAttribute(node, "perm").value_or(Shape{});
    if (perm.empty()) {
        for (std::size_t d = rank; d-- > 0;)
            perm.push_back(std::int64_t(d));
    }
    if (perm.size() != rank)
        throw OnnxImportError(where(node) + ": perm has " + std::to_string(perm.size()) + " axes for a rank " +
                              std::to_string(rank) + " tensor");
    Shape shape(rank);
    std::vector<bool> used(rank, false);
    for (std::size_t d = 0; d < rank; ++d) {
        perm[d] = normaliseAxis(perm[d], rank, node);
        if (used[std::size_t(perm[d])])
            throw OnnxImportError(where(node) + ": perm is not a permutation");
        used[std::size_t(perm[d])] = true;
        shape[d] = x.shape[std::size_t(perm[d])];
    }
    OnnxTensor out = emptyLike(x.type, shape);
    const Shape strides = stridesOf(x.shape);
    Shape index(rank, 0);
    for (std::int64_t flat = 0; flat < product(shape); ++flat) {
        std::int64_t offset = 0;
        for (std::size_t d = 0; d < rank; ++d)
            offset += index[d] * strides[std::size_t(perm[d])];
        appendElement(out, x, std::size_t(offset));
        for (std::size_t d = rank; d-- > 0;) {
            if (++index[d] < shape[d])
                break;
            index[d] = 0;
        }
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

// Keeps the upper (upper=1) or lower triangle of the last two dimensions, shifted by k.
Result trilu(const onnx::NodeProto& node, const std::vector<const OnnxTensor*>& inputs)
{
    const OnnxTensor& x = *inputs[0];
    if (x.shape.size() < 2)
        throw OnnxImportError(where(node) + ": needs a tensor of rank 2 or more");
    const std::int64_t k = inputs.size() > 1 && inputs[1] ? intAt(*inputs[1], 0) : 0;
    const bool upper = intAttribute(node, "upper", 1) != 0;
    const std::int64_t rows = x.shape[x.shape.size() - 2], columns = x.shape.back();
    OnnxTensor out = x;
    for (std::int64_t flat = 0; flat < x.elementCount(); ++flat) {
        const std::int64_t column = flat % columns, row = (flat / columns) % rows;
        const bool keep = upper ? column - row >= k : column - row <= k;
        if (!keep) {
            if (isReal(out))
                out.floats[std::size_t(flat)] = 0;
            else
                out.ints[std::size_t(flat)] = 0;
        }
    }
    return std::vector<OnnxTensor>{std::move(out)};
}

Result evaluate(const onnx::NodeProto& node, const std::vector<const OnnxTensor*>& inputs, std::int64_t opset)
{
    const std::string& op = node.op_type();
    if (op == "Constant")
        return constantNode(node);
    if (inputs.empty() || !inputs[0])
        return std::nullopt;
    const OnnxTensor& x = *inputs[0];
    const auto input = [&](std::size_t i) { return i < inputs.size() ? inputs[i] : nullptr; };
    if (op == "Identity")
        return std::vector<OnnxTensor>{x};
    if (op == "Cast")
        return cast(node, x);
    if (op == "Not" || op == "Neg" || op == "Abs" || op == "Sqrt" || op == "Floor" || op == "Ceil" ||
        op == "Reciprocal")
        return unary(op, x);
    if (op == "Max" || op == "Min" || op == "Sum") {
        const auto combine = binaryOp(op == "Sum" ? "Add" : op, node);
        OnnxTensor acc = x;
        for (std::size_t i = 1; i < inputs.size(); ++i) {
            if (!inputs[i])
                return std::nullopt;
            auto next = binary(acc, *inputs[i], *combine);
            if (!next)
                return std::nullopt;
            acc = std::move((*next)[0]);
        }
        return std::vector<OnnxTensor>{std::move(acc)};
    }
    if (const auto op2 = binaryOp(op, node)) {
        if (!input(1))
            return std::nullopt;
        if (op2->comparison && !isReal(x) && !isReal(*input(1)) && op != "And" && op != "Or" && op != "Xor")
            return compareInts(x, *input(1), *op2);
        return binary(x, *input(1), *op2);
    }
    if (op == "Gather" && input(1))
        return gather(node, x, *input(1));
    if (op == "Concat") {
        for (const OnnxTensor* each : inputs) {
            if (!each)
                return std::nullopt;
        }
        return concat(node, inputs);
    }
    if (op == "Unsqueeze")
        return unsqueeze(node, inputs);
    if (op == "Squeeze")
        return squeeze(node, inputs);
    if (op == "Reshape" && input(1))
        return reshape(node, x, *input(1));
    if (op == "Flatten")
        return flatten(node, x);
    if (op == "ConstantOfShape")
        return constantOfShape(node, x);
    if (op == "Range" && input(1) && input(2))
        return range(node, x, *input(1), *input(2));
    if (op == "Expand" && input(1))
        return expand(node, x, *input(1));
    if (op == "Where" && input(1) && input(2))
        return whereNode(x, *input(1), *input(2));
    if (op == "Slice")
        return slice(node, inputs, opset);
    if (op == "Transpose")
        return transpose(node, x);
    if (op == "Trilu")
        return trilu(node, inputs);
    return std::nullopt;
}

} // namespace

std::optional<std::vector<OnnxTensor>>
evaluateConstantNode(const onnx::NodeProto& node, const std::vector<const OnnxTensor*>& inputs, std::int64_t opset)
{
    if (!node.domain().empty() && node.domain() != "ai.onnx")
        return std::nullopt;
    auto outputs = evaluate(node, inputs, opset);
    if (!outputs)
        return std::nullopt;
    if (outputs->size() > std::size_t(node.output_size()))
        outputs->resize(std::size_t(node.output_size()));
    for (std::size_t i = 0; i < outputs->size(); ++i) {
        OnnxTensor& out = (*outputs)[i];
        out.name = node.output(int(i));
        if (!canWriteToProto(out.type) || out.elementCount() > kMaxFoldedElements)
            return std::nullopt;
    }
    return outputs;
}

} // namespace mantissa::onnx_import
