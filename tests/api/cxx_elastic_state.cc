// SPDX-License-Identifier: Apache-2.0
// disttrain/elastic.hpp on a one-rank context that is not elastic: commit, restore and
// sync of byte buffers; run() returns what the function returns, propagates errors other
// than a lost peer untouched, and on a lost peer calls the callbacks, restores the last
// commit and tries to re-form (which this job refuses, so run() throws with the reason).
// The multi-rank paths (a real loss, replacements) are in test_elastic_train.py.
#include <disttrain/elastic.hpp>

#include <cstdio>
#include <string>

namespace {

int failures = 0;

void expect(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what);
        ++failures;
    }
}

} // namespace

int main()
{
    dt_context_params_t cp{};
    cp.field_mask = DT_CONTEXT_PARAM_FIELD_RANK | DT_CONTEXT_PARAM_FIELD_SIZE;
    cp.size = 1;
    disttrain::context ctx(cp);
    disttrain::elastic::state st(ctx);
    int epoch = 0;
    float weights[3] = {1, 2, 3};
    st.add(&epoch, sizeof epoch);
    st.add(weights, sizeof weights);
    expect(st.bytes() == sizeof epoch + sizeof weights, "bytes() sums the buffers");

    epoch = 5;
    st.restore();
    expect(epoch == 5, "restore before any save leaves the buffers alone");
    st.commit(); // one rank: nobody waits to join, so it does not throw
    epoch = 7;
    weights[1] = -1;
    st.restore();
    expect(epoch == 5 && weights[1] == 2, "restore goes back to the commit");
    st.sync(); // one rank: nothing to broadcast, but it saves
    epoch = 9;
    st.restore();
    expect(epoch == 5, "sync saves");

    int calls = 0;
    const int answer = disttrain::elastic::run(st, [&] { return ++calls * 42; });
    expect(answer == 42 && calls == 1, "run returns what the function returns");

    bool other_propagated = false;
    try {
        disttrain::elastic::run(st, [&]() -> void {
            epoch = 11;
            throw disttrain::error(DT_ERR_TIMEOUT, "slow");
        });
    } catch (const disttrain::error &e) {
        other_propagated = e.status() == DT_ERR_TIMEOUT && std::string(e.what()) == "slow";
    }
    expect(other_propagated && epoch == 11, "an error other than a lost peer propagates as is");

    epoch = 5;
    st.save();
    int lost = 0, resets = 0;
    st.on_peer_lost([&](const disttrain::error &e) { lost += e.status() == DT_ERR_PEER_LOST; });
    st.on_reset([&] { ++resets; });
    std::string message;
    dt_status_t status = DT_OK;
    try {
        disttrain::elastic::run(st, [&]() -> void {
            epoch = 13;
            throw disttrain::error(DT_ERR_PEER_LOST, "rank 1 is gone");
        });
    } catch (const disttrain::error &e) {
        status = e.status();
        message = e.what();
    }
    expect(lost == 1 && resets == 0, "a lost peer calls the lost-peer callbacks only");
    expect(epoch == 5, "a lost peer restores the last commit");
    expect(status == DT_ERR_INVALID_STATE, "a job that is not elastic refuses the re-form");
    expect(message.rfind("elastic: dt_context_reform: ", 0) == 0 &&
               message.find("DISTTRAIN_ELASTIC=1") != std::string::npos,
           "the error names the re-form and what the job lacks");
    if (failures == 0)
        std::printf("cxx_elastic_state: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
