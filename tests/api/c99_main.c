/* SPDX-License-Identifier: Apache-2.0 */
/* Runs after the public C headers compiled as C99 in their own translation units. */
#include <stdio.h>

int c99_disttrain_h_compiled(void);
int c99_plugin_common_h_compiled(void);
int c99_plugin_transport_h_compiled(void);
int c99_plugin_memory_h_compiled(void);

int main(void)
{
    int ok = c99_disttrain_h_compiled() && c99_plugin_common_h_compiled() &&
             c99_plugin_transport_h_compiled() && c99_plugin_memory_h_compiled();
    printf("public C headers compile as C99: %s\n", ok ? "yes" : "no");
    return ok ? 0 : 1;
}
