/* Compiles disttrain/plugin/transport.h alone as C99 with -Wall -Wextra -Wpedantic -Werror. */
#include <disttrain/plugin/transport.h>
#include <disttrain/plugin/transport.h> /* twice: the include guard must hold */

int c99_plugin_transport_h_compiled(void);
int c99_plugin_transport_h_compiled(void) { return 1; }
