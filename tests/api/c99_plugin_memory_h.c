/* SPDX-License-Identifier: Apache-2.0 */
/* Compiles disttrain/plugin/memory.h alone as C99 with -Wall -Wextra -Wpedantic -Werror. */
#include <disttrain/plugin/memory.h>
#include <disttrain/plugin/memory.h> /* twice: the include guard must hold */

int c99_plugin_memory_h_compiled(void);
int c99_plugin_memory_h_compiled(void)
{
    dt_memory_pointer_info_t info = {sizeof(dt_memory_pointer_info_t), DT_MEMORY_VERSION,
                                     DTP_MEMORY_HOST, -1};
    dt_memory_v1_t ops = {0};
    return ops.event_query == 0 && info.struct_size > 0 && DT_PLUGIN_KIND_MEMORY == 3u;
}
