#include "engine/backend/cpu/onednn_library.h"

#include "engine/util/check.h"

#include <oneapi/dnnl/dnnl.h>

#include <dlfcn.h>

#include <string>

#define MANTISSA_ONEDNN_TEXT(x) #x
#define MANTISSA_ONEDNN_STRING(x) MANTISSA_ONEDNN_TEXT(x)

namespace mantissa::cpu {

namespace {

// The library's soname and Debian's package for it: libdnnl.so.2 in libdnnl2.
constexpr const char* kLibrary = "libdnnl.so." MANTISSA_ONEDNN_STRING(DNNL_VERSION_MAJOR);
constexpr const char* kPackage = "libdnnl" MANTISSA_ONEDNN_STRING(DNNL_VERSION_MAJOR);

struct Library {
    void* handle = nullptr;
    std::string problem;
};

const Library& library()
{
    static const Library loaded = [] {
        Library lib;
        // RTLD_NODELETE: primitives and kernels it made live until the process ends.
        lib.handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!lib.handle) {
            const char* reason = dlerror();
            lib.problem = std::string("oneDNN's library ") + kLibrary + " cannot be loaded (" +
                          (reason ? reason : "no reason given") + "); install the package " + kPackage +
                          " (Debian, Ubuntu; libdnnl-dev to build Mantissa), which the CPU backend needs";
        }
        return lib;
    }();
    return loaded;
}

void* symbol(const char* name)
{
    const Library& lib = library();
    if (!lib.handle)
        throw ResourceError(lib.problem);
    void* found = dlsym(lib.handle, name);
    if (!found)
        throw ResourceError(std::string("oneDNN's library ") + kLibrary + " has no " + name + " (" + dlerror() +
                            "); Mantissa needs oneDNN 2.6 or a later 2.x, from the package " + kPackage);
    return found;
}

// The library's function `name`, of the type of oneDNN's declaration of it.
template <typename Function>
Function entry(const char* name)
{
    return reinterpret_cast<Function>(symbol(name));
}

} // namespace

std::string oneDnnLibraryProblem() { return library().problem; }

} // namespace mantissa::cpu

// The definition must match dnnl.h's declaration, which the compiler checks; the library's
// function is looked up once, on the first call (a thrown ResourceError leaves the static
// unset, so a later call tries again and says the same).
#define MANTISSA_ONEDNN_FORWARD(result, name, parameters, arguments)                                                   \
    extern "C" result name parameters                                                                                  \
    {                                                                                                                  \
        static const auto forward = mantissa::cpu::entry<decltype(&name)>(#name);                                      \
        return forward arguments;                                                                                      \
    }

MANTISSA_ONEDNN_FORWARD(const dnnl_version_t*, dnnl_version, (void), ())
MANTISSA_ONEDNN_FORWARD(dnnl_cpu_isa_t, dnnl_get_effective_cpu_isa, (void), ())
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_engine_create,
                        (dnnl_engine_t * engine, dnnl_engine_kind_t kind, size_t index), (engine, kind, index))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_engine_destroy, (dnnl_engine_t engine), (engine))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_stream_create,
                        (dnnl_stream_t * stream, dnnl_engine_t engine, unsigned flags), (stream, engine, flags))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_stream_destroy, (dnnl_stream_t stream), (stream))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_stream_wait, (dnnl_stream_t stream), (stream))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_memory_create,
                        (dnnl_memory_t * memory, const dnnl_memory_desc_t* memory_desc, dnnl_engine_t engine,
                         void* handle),
                        (memory, memory_desc, engine, handle))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_memory_destroy, (dnnl_memory_t memory), (memory))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_memory_get_data_handle, (const_dnnl_memory_t memory, void** handle),
                        (memory, handle))
MANTISSA_ONEDNN_FORWARD(int, dnnl_memory_desc_equal, (const dnnl_memory_desc_t* lhs, const dnnl_memory_desc_t* rhs),
                        (lhs, rhs))
MANTISSA_ONEDNN_FORWARD(size_t, dnnl_memory_desc_get_size, (const dnnl_memory_desc_t* memory_desc), (memory_desc))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_memory_desc_init_by_strides,
                        (dnnl_memory_desc_t * memory_desc, int ndims, const dnnl_dims_t dims,
                         dnnl_data_type_t data_type, const dnnl_dims_t strides),
                        (memory_desc, ndims, dims, data_type, strides))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_memory_desc_init_by_tag,
                        (dnnl_memory_desc_t * memory_desc, int ndims, const dnnl_dims_t dims,
                         dnnl_data_type_t data_type, dnnl_format_tag_t tag),
                        (memory_desc, ndims, dims, data_type, tag))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_post_ops_create, (dnnl_post_ops_t * post_ops), (post_ops))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_post_ops_destroy, (dnnl_post_ops_t post_ops), (post_ops))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_post_ops_append_sum, (dnnl_post_ops_t post_ops, float scale),
                        (post_ops, scale))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_post_ops_append_eltwise,
                        (dnnl_post_ops_t post_ops, float scale, dnnl_alg_kind_t alg_kind, float alpha, float beta),
                        (post_ops, scale, alg_kind, alpha, beta))
MANTISSA_ONEDNN_FORWARD(int, dnnl_post_ops_len, (const_dnnl_post_ops_t post_ops), (post_ops))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_attr_create, (dnnl_primitive_attr_t * attr), (attr))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_attr_destroy, (dnnl_primitive_attr_t attr), (attr))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_attr_set_output_scales,
                        (dnnl_primitive_attr_t attr, dnnl_dim_t count, int mask, const float* scales),
                        (attr, count, mask, scales))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_attr_set_post_ops,
                        (dnnl_primitive_attr_t attr, const_dnnl_post_ops_t post_ops), (attr, post_ops))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_matmul_desc_init,
                        (dnnl_matmul_desc_t * matmul_desc, const dnnl_memory_desc_t* src_desc,
                         const dnnl_memory_desc_t* weights_desc, const dnnl_memory_desc_t* bias_desc,
                         const dnnl_memory_desc_t* dst_desc),
                        (matmul_desc, src_desc, weights_desc, bias_desc, dst_desc))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_convolution_forward_desc_init,
                        (dnnl_convolution_desc_t * conv_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind,
                         const dnnl_memory_desc_t* src_desc, const dnnl_memory_desc_t* weights_desc,
                         const dnnl_memory_desc_t* bias_desc, const dnnl_memory_desc_t* dst_desc,
                         const dnnl_dims_t strides, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r),
                        (conv_desc, prop_kind, alg_kind, src_desc, weights_desc, bias_desc, dst_desc, strides,
                         padding_l, padding_r))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_convolution_backward_data_desc_init,
                        (dnnl_convolution_desc_t * conv_desc, dnnl_alg_kind_t alg_kind,
                         const dnnl_memory_desc_t* diff_src_desc, const dnnl_memory_desc_t* weights_desc,
                         const dnnl_memory_desc_t* diff_dst_desc, const dnnl_dims_t strides,
                         const dnnl_dims_t padding_l, const dnnl_dims_t padding_r),
                        (conv_desc, alg_kind, diff_src_desc, weights_desc, diff_dst_desc, strides, padding_l,
                         padding_r))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_convolution_backward_weights_desc_init,
                        (dnnl_convolution_desc_t * conv_desc, dnnl_alg_kind_t alg_kind,
                         const dnnl_memory_desc_t* src_desc, const dnnl_memory_desc_t* diff_weights_desc,
                         const dnnl_memory_desc_t* diff_bias_desc, const dnnl_memory_desc_t* diff_dst_desc,
                         const dnnl_dims_t strides, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r),
                        (conv_desc, alg_kind, src_desc, diff_weights_desc, diff_bias_desc, diff_dst_desc, strides,
                         padding_l, padding_r))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_dilated_convolution_forward_desc_init,
                        (dnnl_convolution_desc_t * conv_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind,
                         const dnnl_memory_desc_t* src_desc, const dnnl_memory_desc_t* weights_desc,
                         const dnnl_memory_desc_t* bias_desc, const dnnl_memory_desc_t* dst_desc,
                         const dnnl_dims_t strides, const dnnl_dims_t dilates, const dnnl_dims_t padding_l,
                         const dnnl_dims_t padding_r),
                        (conv_desc, prop_kind, alg_kind, src_desc, weights_desc, bias_desc, dst_desc, strides, dilates,
                         padding_l, padding_r))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_dilated_convolution_backward_data_desc_init,
                        (dnnl_convolution_desc_t * conv_desc, dnnl_alg_kind_t alg_kind,
                         const dnnl_memory_desc_t* diff_src_desc, const dnnl_memory_desc_t* weights_desc,
                         const dnnl_memory_desc_t* diff_dst_desc, const dnnl_dims_t strides, const dnnl_dims_t dilates,
                         const dnnl_dims_t padding_l, const dnnl_dims_t padding_r),
                        (conv_desc, alg_kind, diff_src_desc, weights_desc, diff_dst_desc, strides, dilates, padding_l,
                         padding_r))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_dilated_convolution_backward_weights_desc_init,
                        (dnnl_convolution_desc_t * conv_desc, dnnl_alg_kind_t alg_kind,
                         const dnnl_memory_desc_t* src_desc, const dnnl_memory_desc_t* diff_weights_desc,
                         const dnnl_memory_desc_t* diff_bias_desc, const dnnl_memory_desc_t* diff_dst_desc,
                         const dnnl_dims_t strides, const dnnl_dims_t dilates, const dnnl_dims_t padding_l,
                         const dnnl_dims_t padding_r),
                        (conv_desc, alg_kind, src_desc, diff_weights_desc, diff_bias_desc, diff_dst_desc, strides,
                         dilates, padding_l, padding_r))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_eltwise_forward_desc_init,
                        (dnnl_eltwise_desc_t * eltwise_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind,
                         const dnnl_memory_desc_t* data_desc, float alpha, float beta),
                        (eltwise_desc, prop_kind, alg_kind, data_desc, alpha, beta))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_eltwise_backward_desc_init,
                        (dnnl_eltwise_desc_t * eltwise_desc, dnnl_alg_kind_t alg_kind,
                         const dnnl_memory_desc_t* diff_data_desc, const dnnl_memory_desc_t* data_desc, float alpha,
                         float beta),
                        (eltwise_desc, alg_kind, diff_data_desc, data_desc, alpha, beta))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_softmax_forward_desc_init,
                        (dnnl_softmax_desc_t * softmax_desc, dnnl_prop_kind_t prop_kind,
                         const dnnl_memory_desc_t* data_desc, int softmax_axis),
                        (softmax_desc, prop_kind, data_desc, softmax_axis))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_softmax_backward_desc_init,
                        (dnnl_softmax_desc_t * softmax_desc, const dnnl_memory_desc_t* diff_data_desc,
                         const dnnl_memory_desc_t* data_desc, int softmax_axis),
                        (softmax_desc, diff_data_desc, data_desc, softmax_axis))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_desc_iterator_create,
                        (dnnl_primitive_desc_iterator_t * iterator, const_dnnl_op_desc_t op_desc,
                         const_dnnl_primitive_attr_t attr, dnnl_engine_t engine,
                         const_dnnl_primitive_desc_t hint_forward_primitive_desc),
                        (iterator, op_desc, attr, engine, hint_forward_primitive_desc))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_desc_iterator_destroy, (dnnl_primitive_desc_iterator_t iterator),
                        (iterator))
MANTISSA_ONEDNN_FORWARD(dnnl_primitive_desc_t, dnnl_primitive_desc_iterator_fetch,
                        (const_dnnl_primitive_desc_iterator_t iterator), (iterator))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_desc_destroy, (dnnl_primitive_desc_t primitive_desc),
                        (primitive_desc))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_desc_query,
                        (const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what, int index, void* result),
                        (primitive_desc, what, index, result))
MANTISSA_ONEDNN_FORWARD(const dnnl_memory_desc_t*, dnnl_primitive_desc_query_md,
                        (const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what, int index),
                        (primitive_desc, what, index))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_reorder_primitive_desc_create,
                        (dnnl_primitive_desc_t * reorder_primitive_desc, const dnnl_memory_desc_t* src_desc,
                         dnnl_engine_t src_engine, const dnnl_memory_desc_t* dst_desc, dnnl_engine_t dst_engine,
                         const_dnnl_primitive_attr_t attr),
                        (reorder_primitive_desc, src_desc, src_engine, dst_desc, dst_engine, attr))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_create,
                        (dnnl_primitive_t * primitive, const_dnnl_primitive_desc_t primitive_desc),
                        (primitive, primitive_desc))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_destroy, (dnnl_primitive_t primitive), (primitive))
MANTISSA_ONEDNN_FORWARD(dnnl_status_t, dnnl_primitive_execute,
                        (const_dnnl_primitive_t primitive, dnnl_stream_t stream, int nargs,
                         const dnnl_exec_arg_t* args),
                        (primitive, stream, nargs, args))
