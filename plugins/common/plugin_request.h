/* SPDX-License-Identifier: Apache-2.0 */
// Starting and completing the core's request structs, shared by the transport plugins
// (header-only: plugins never link the core or each other). The core keeps a request in
// place while its status is DTP_INPROGRESS; once a function here writes another status
// the plugin forgets the pointer.
#pragma once

#include <disttrain/plugin/transport.h>

#include <cstddef>
#include <cstdint>

namespace dtp {

inline void start_request(dt_transport_request_t *req, int32_t peer) {
    req->status = DTP_INPROGRESS;
    req->peer = peer;
    req->bytes = 0;
}

inline void complete_request(dt_transport_request_t *req, int32_t status, size_t bytes) {
    req->bytes = bytes;
    req->status = status;
}

} // namespace dtp
