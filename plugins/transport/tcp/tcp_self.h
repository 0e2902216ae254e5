/* SPDX-License-Identifier: Apache-2.0 */
// Messages a rank sends to itself. The core's algorithms avoid them, but a transport must
// not crash on them: a send is copied (so it completes at once, like a buffered send) and
// matched with receives by tag in FIFO order.
#pragma once

#include "tcp_host.h"

#include <disttrain/plugin/transport.h>

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace dt::tcp {

class SelfChannel {
public:
    SelfChannel(const Host &host, int rank) : host_(host), rank_(rank) {}

    // Return the request's status, as Endpoint does.
    int32_t isend(uint64_t tag, const void *buf, size_t len, dt_transport_request_t *req);
    int32_t irecv(uint64_t tag, void *buf, size_t cap, dt_transport_request_t *req);

    // Fails every posted receive with status; later calls fail the same way.
    void fail_all(int32_t status);

private:
    struct Posted {
        dt_transport_request_t *req;
        void *buf;
        size_t cap;
    };
    int32_t deliver(const void *data, size_t len, const Posted &to);

    Host host_;
    int rank_;
    int32_t fail_status_ = 0;
    std::unordered_map<uint64_t, std::deque<Posted>> posted_;
    std::unordered_map<uint64_t, std::deque<std::vector<uint8_t>>> unexpected_;
};

} // namespace dt::tcp
