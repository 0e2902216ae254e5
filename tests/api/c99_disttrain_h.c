/* Compiles disttrain/disttrain.h alone as C99 with -Wall -Wextra -Wpedantic -Werror. */
#include <disttrain/disttrain.h>
#include <disttrain/disttrain.h> /* twice: the include guard must hold */

int c99_disttrain_h_compiled(void);
int c99_disttrain_h_compiled(void) { return 1; }
