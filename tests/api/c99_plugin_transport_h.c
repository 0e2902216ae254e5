/* SPDX-License-Identifier: Apache-2.0 */
/* Compiles disttrain/plugin/transport.h alone as C99 with -Wall -Wextra -Wpedantic -Werror. */
#include <disttrain/plugin/transport.h>
#include <disttrain/plugin/transport.h> /* twice: the include guard must hold */

int c99_plugin_transport_h_compiled(void);
int c99_plugin_transport_h_compiled(void)
{
    /* The version 3 table and its capability answer are plain C99 structs. */
    dt_transport_caps_t caps = {sizeof(dt_transport_caps_t), DT_TRANSPORT_VERSION, 0, 0, 0, 0};
    dt_transport_v3_t ops = {0};
    caps.p2p_memory = DT_TRANSPORT_MEMORY_HOST | DT_TRANSPORT_MEMORY_DEVICE;
    caps.flags = DT_TRANSPORT_CAP_CONTROL;
    return ops.query == 0 && caps.struct_size > 0;
}
