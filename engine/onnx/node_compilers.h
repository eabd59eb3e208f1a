#pragma once
// One compiler per ONNX op type: how a node of that type becomes ops of the engine's graph
// (onnx_compiler.h). Each family of ops adds its rows in a file of its own
// (compile_basic_nodes.cpp, ...); this table is what the compilation, `inspect` and the docs ask
// whether an op type compiles.
#include "engine/onnx/onnx_compiler.h"

#include <map>
#include <string>
#include <vector>

namespace mantissa::onnx_import {

using NodeCompiler = void (*)(OnnxCompiler&, const OnnxNode&);
using NodeCompilerTable = std::map<std::string, NodeCompiler>;

// The families' rows; each adds the op types it compiles.
void addBasicNodeCompilers(NodeCompilerTable& table);
void addTensorNodeCompilers(NodeCompilerTable& table);
void addConvNodeCompilers(NodeCompilerTable& table);
void addConvTransposeNodeCompiler(NodeCompilerTable& table);

// The ops of a pattern the compilation runs as fewer ops (attention_pattern.h): attention's
// scores, a MatMul of two computed values times `alpha`, and the Softmax reading them (the
// product, past the Mul and the mask's Add), causal where the mask was.
void compileScoresMatMul(OnnxCompiler& c, const OnnxNode& node, float alpha);
void compileScoresSoftmax(OnnxCompiler& c, const OnnxNode& node, const std::string& scores, bool causal);

// Null where `opType` does not compile (yet).
NodeCompiler findNodeCompiler(const std::string& opType);
// Every op type that compiles, sorted.
std::vector<std::string> compiledOpTypes();

} // namespace mantissa::onnx_import
