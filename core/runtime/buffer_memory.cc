// SPDX-License-Identifier: Apache-2.0
#include "runtime/buffer_memory.h"

#include "runtime/enum_value.h"
#include "runtime/error.h"

namespace dt {

namespace {

bool has(const dt_op_params_t *params, uint64_t bit)
{
    return params != nullptr && (params->field_mask & bit) != 0;
}

// What the caller said of the buffers' memory, for messages.
std::string said(const dt_op_params_t *params, dt_memory_type_t requested)
{
    if (!has(params, DT_OP_PARAM_FIELD_MEMORY_TYPE))
        return "params->memory_type is not set, which means DT_MEMORY_HOST";
    return requested == DT_MEMORY_DEVICE ? "params->memory_type is DT_MEMORY_DEVICE"
                                         : "params->memory_type is DT_MEMORY_HOST";
}

// A buffer the caller calls `requested` memory (host or device) that the provider knows
// as the other: refused before anything is queued. The staging copies would fail in the
// engine (breaking the context, and the peers' calls with it), and a CPU read of device
// memory would kill the process.
[[noreturn]] void refuse_contradiction(const char *fn, const char *name,
                                       const dt_op_params_t *params,
                                       dt_memory_type_t requested,
                                       const MemoryClassifier &classifier, const char *what,
                                       const void *buf, const PointerMemory &found)
{
    if (requested == DT_MEMORY_DEVICE)
        throw_error(DT_ERR_INVALID_ARGUMENT, call_label(fn, name), ": ",
                    said(params, requested), ", but ", what, " (", buf, ") is host memory "
                    "to the ", classifier.provider(), " memory provider (not device memory "
                    "of its runtime); pass DT_MEMORY_HOST for host memory, DT_MEMORY_AUTO "
                    "to let the provider tell, or a buffer in device memory");
    throw_error(DT_ERR_INVALID_ARGUMENT, call_label(fn, name), ": ", said(params, requested),
                ", but ", what, " (", buf, ") is device memory (device ", found.device,
                ") to the ", classifier.provider(), " memory provider, which the library "
                "must not read with the CPU; pass DT_MEMORY_DEVICE for device memory, "
                "DT_MEMORY_AUTO to let the provider tell, or copy the data to host memory "
                "first");
}

// What the classifier says of the buffers, and the first buffer it was asked about
// (null: none was, all being NULL).
struct Classified {
    PointerMemory memory;
    const char *first_name = nullptr;
};

// What the classifier says of the buffers: one memory type, and for device memory one
// device, for all of them (a call's buffers are one memory, as dt_op_params_t
// documents). `requested`: what the caller said (host, device or auto); a buffer the
// provider knows as the other type is refused.
Classified classify_all(const char *fn, const char *name, const dt_op_params_t *params,
                        dt_memory_type_t requested, const MemoryClassifier &classifier,
                        std::initializer_list<const void *> buffers,
                        std::initializer_list<const char *> names)
{
    PointerMemory found;
    const char *first_name = nullptr;
    auto next_name = names.begin();
    for (const void *buf : buffers) {
        const char *this_name = next_name != names.end() ? *next_name++ : "buffer";
        if (buf == nullptr)
            continue;
        PointerMemory m = classifier.classify(buf);
        if (requested != DT_MEMORY_AUTO && m.type != requested)
            refuse_contradiction(fn, name, params, requested, classifier, this_name, buf, m);
        if (first_name == nullptr) {
            found = m;
            first_name = this_name;
        } else if (m.type != found.type) {
            throw_error(DT_ERR_INVALID_ARGUMENT, call_label(fn, name),
                        ": with DT_MEMORY_AUTO the ",
                        classifier.provider(), " memory provider finds ", first_name,
                        " in ", dt_memory_type_name(found.type), " memory but ", this_name,
                        " in ", dt_memory_type_name(m.type),
                        " memory; a call's buffers must live in the same memory");
        } else if (m.type == DT_MEMORY_DEVICE && m.device >= 0 && found.device >= 0 &&
                   m.device != found.device) {
            throw_error(DT_ERR_INVALID_ARGUMENT, call_label(fn, name), ": the ",
                        classifier.provider(), " memory provider finds ", first_name,
                        " on device ", found.device, " but ", this_name, " on device ",
                        m.device, "; a call's buffers must be on one device");
        }
    }
    return {found, first_name};
}

// params->device against the device the provider finds the buffers on: the ordinal is
// the caller's word for where they are, and nothing in the library acts on it, so one
// that is wrong (or names no device at all) would pass silently.
void check_device(const char *fn, const char *name, const dt_op_params_t *params,
                  const MemoryClassifier &classifier, const Classified &found)
{
    const int device = found.memory.device;
    if (!has(params, DT_OP_PARAM_FIELD_DEVICE) || device < 0 || params->device == device)
        return;
    throw_error(DT_ERR_INVALID_ARGUMENT, call_label(fn, name), ": params->device is ",
                params->device, ", but the ", classifier.provider(), " memory provider "
                "finds ", found.first_name, " on device ", device, "; pass device ", device,
                ", or clear DT_OP_PARAM_FIELD_DEVICE to take the buffers' device");
}

} // namespace

std::string call_label(const char *fn, const char *name)
{
    if (name == nullptr || *name == '\0')
        return fn;
    return cat(fn, " '", name, "'");
}

void check_op_params(const char *fn, const char *name, const dt_op_params_t *params)
{
    if (has(params, DT_OP_PARAM_FIELD_MEMORY_TYPE)) {
        const int t = enum_value(params->memory_type);
        if (t < 0 || t >= DT_MEMORY_TYPE_COUNT_)
            throw_error(DT_ERR_INVALID_ARGUMENT, call_label(fn, name),
                        ": params->memory_type ", t, " is not a dt_memory_type_t; use "
                        "DT_MEMORY_HOST, DT_MEMORY_DEVICE or DT_MEMORY_AUTO");
    }
    if (has(params, DT_OP_PARAM_FIELD_DEVICE) && params->device < 0)
        throw_error(DT_ERR_INVALID_ARGUMENT, call_label(fn, name), ": params->device ",
                    params->device, " is negative; pass the device ordinal (>= 0), or "
                    "clear DT_OP_PARAM_FIELD_DEVICE for the provider's choice");
}

BufferMemory resolve_buffer_memory(const char *fn, const char *name,
                                   const dt_op_params_t *params,
                                   std::initializer_list<const void *> buffers,
                                   std::initializer_list<const char *> buffer_names,
                                   const MemoryClassifier *classifier)
{
    BufferMemory out;
    if (params == nullptr)
        return out; // the forms without _ex: host memory, nothing to check
    check_op_params(fn, name, params);
    const dt_memory_type_t requested = has(params, DT_OP_PARAM_FIELD_MEMORY_TYPE)
                                           ? params->memory_type
                                           : DT_MEMORY_HOST;
    if (has(params, DT_OP_PARAM_FIELD_DEVICE))
        out.device = params->device;
    if (has(params, DT_OP_PARAM_FIELD_STREAM))
        out.stream = params->stream;

    out.type = requested;
    if (classifier != nullptr) {
        // Asked whatever the caller said: a memory type that contradicts what the
        // provider knows of a pointer is refused here, where it costs only this call.
        const Classified found = classify_all(fn, name, params, requested, *classifier,
                                              buffers, buffer_names);
        if (requested == DT_MEMORY_AUTO)
            out.type = found.memory.type;
        if (out.type == DT_MEMORY_DEVICE) {
            check_device(fn, name, params, *classifier, found);
            if (found.memory.device >= 0)
                out.device = found.memory.device;
        }
    } else if (requested == DT_MEMORY_AUTO) {
        // No provider loaded: nothing in this process can have made device memory that
        // the library could move, so the buffers are taken as host memory.
        out.type = DT_MEMORY_HOST;
    }
    if (out.type == DT_MEMORY_DEVICE && classifier == nullptr) {
        std::string what;
        for (const char *n : buffer_names)
            what += cat(what.empty() ? "" : " and ", n);
        throw_error(DT_ERR_UNSUPPORTED, call_label(fn, name), ": ",
                    what.empty() ? std::string("the call") : what,
                    buffer_names.size() > 1 ? " are" : " is",
                    " device memory (DT_MEMORY_DEVICE), but no memory provider is loaded: "
                    "device memory needs a memory provider, chosen with DISTTRAIN_MEMORY "
                    "(cuda for cudaMalloc'd memory, e.g. PyTorch's CUDA tensors; the cuDNN "
                    "compute plugin names it itself), or copy the data to host memory and "
                    "pass DT_MEMORY_HOST");
    }
    if (out.type == DT_MEMORY_HOST) {
        out.device = -1;
        out.stream = nullptr;
    }
    return out;
}

} // namespace dt
