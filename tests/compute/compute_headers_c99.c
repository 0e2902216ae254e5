/* SPDX-License-Identifier: Apache-2.0 */
/* compute.h and plugin/compute.h compile as strict C99 and their inline helpers work. */
#include <disttrain/compute.h>
#include <disttrain/plugin/compute.h>

int main(void)
{
    dt_tensor_desc_t d = dt_tensor_desc_4d(DT_FLOAT32, 2, 3, 4, 5);
    dt_compute_params_t p = {0};
    dt_conv_params_t conv = {0};
    dtp_tensor_t t = {0, 0, {0, 0, 0, 0}};
    dt_compute_v1_t ops = {0};
    (void)p;
    (void)conv;
    (void)t;
    (void)ops;
    return d.ndims == 4 && d.dims[3] == 5 && dt_tensor_desc_1d(DT_BFLOAT16, 7).dims[0] == 7 ? 0 : 1;
}
