// SPDX-License-Identifier: Apache-2.0
// disttrain.hpp's op_params on a one-rank context: the C struct it builds, host memory
// running, device memory thrown as disttrain::error with DT_ERR_UNSUPPORTED while no
// memory provider is loaded, and a negative device refused by the library.
#include <disttrain/disttrain.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what);
        ++failures;
    }
}

template <typename F>
dt_status_t status_of(F f, std::string *message = nullptr)
{
    try {
        f();
        return DT_OK;
    } catch (const disttrain::error &e) {
        if (message != nullptr)
            *message = e.what();
        return e.status();
    }
}

} // namespace

int main()
{
    const dt_op_params_t def = disttrain::op_params{}.c();
    expect(def.field_mask == DT_OP_PARAM_FIELD_MEMORY_TYPE && def.memory_type == DT_MEMORY_HOST,
           "default params say host and nothing else");
    int stream_stand_in = 0;
    const dt_op_params_t dev = disttrain::op_params::on_device(3, &stream_stand_in).c();
    expect(dev.field_mask == (DT_OP_PARAM_FIELD_MEMORY_TYPE | DT_OP_PARAM_FIELD_DEVICE |
                              DT_OP_PARAM_FIELD_STREAM) &&
               dev.memory_type == DT_MEMORY_DEVICE && dev.device == 3 &&
               dev.stream == &stream_stand_in,
           "on_device sets memory type, device and stream");
    expect(disttrain::name_of(disttrain::memory_type::device) == "device", "name_of");

    dt_context_params_t cp{};
    cp.field_mask = DT_CONTEXT_PARAM_FIELD_RANK | DT_CONTEXT_PARAM_FIELD_SIZE;
    cp.size = 1;
    disttrain::context ctx(cp);
    std::vector<float> v{1, 2, 3};
    ctx.allreduce(v, disttrain::reduce_op::sum, "host", disttrain::op_params{});
    expect(v[2] == 3.0f, "host allreduce with params runs");

    std::string message;
    expect(status_of([&] {
               ctx.allreduce(v, disttrain::reduce_op::sum, "grad.w",
                             disttrain::op_params::on_device(0));
           }, &message) == DT_ERR_UNSUPPORTED,
           "device allreduce throws DT_ERR_UNSUPPORTED");
    expect(message.find("needs a memory provider") != std::string::npos,
           "the error says what device memory needs");
    disttrain::op_params negative;
    negative.device = -1;
    expect(status_of([&] { ctx.broadcast(v, 0, "b", negative); }, &message) ==
                   DT_ERR_INVALID_ARGUMENT &&
               message.find("params->device") != std::string::npos,
           "a negative device is refused, naming the field");
    std::printf("C++ op params: %d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
