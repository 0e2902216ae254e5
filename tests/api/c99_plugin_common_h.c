/* SPDX-License-Identifier: Apache-2.0 */
/* Compiles disttrain/plugin/common.h alone as C99 with -Wall -Wextra -Wpedantic -Werror. */
#include <disttrain/plugin/common.h>
#include <disttrain/plugin/common.h> /* twice: the include guard must hold */

int c99_plugin_common_h_compiled(void);
int c99_plugin_common_h_compiled(void) { return 1; }
