/* SPDX-License-Identifier: Apache-2.0 */
/* Compiles disttrain/disttrain.h alone as C99 with -Wall -Wextra -Wpedantic -Werror. */
#include <disttrain/disttrain.h>
#include <disttrain/disttrain.h> /* twice: the include guard must hold */

int c99_disttrain_h_compiled(void);
int c99_disttrain_h_compiled(void)
{
    /* `= {0}` is the documented way to start a params struct: it must compile cleanly. */
    dt_op_params_t params = {0};
    params.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE | DT_OP_PARAM_FIELD_DEVICE |
                        DT_OP_PARAM_FIELD_STREAM;
    params.memory_type = DT_MEMORY_AUTO;
    params.device = 0;
    params.stream = NULL;
    return DT_API_MINOR >= 1 && DT_MEMORY_HOST == 0 && params.field_mask == 7u &&
           DT_MEMORY_TYPE_COUNT_ == 3;
}
