/* pot.h compiles as strict C99 (-std=c99 -pedantic -Werror) and links. */
#include "pot.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  pot_digest d;
  pot_error *err = NULL;
  char hex[2 * POT_DIGEST_SIZE + 1];
  if (pot_abi_version() != POT_ABI_VERSION) return 1;
  if (pot_sha256(&d, "abc", 3, &err) != POT_OK) return 2;
  if (pot_digest_to_hex(hex, &d, &err) != POT_OK) return 3;
  if (strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") != 0) return 4;
  if (pot_digest_from_hex(&d, "xyz", &err) != POT_E_MALFORMED) return 5;
  if (pot_error_code(err) != POT_E_MALFORMED || pot_error_message(err)[0] == '\0') return 6;
  pot_error_free(err);
  /* Any int a C caller passes as an enum is handled, negative included. */
  if (pot_dtype_size((pot_dtype)-3) != 0 || pot_dtype_name((pot_dtype)99) != NULL) return 7;
  if (strcmp(pot_status_name((pot_status)-1), "POT_E_UNKNOWN") != 0) return 8;
  if (sizeof(pot_dtype) != 4 || sizeof(pot_status) != 4) return 9;
  printf("pot %s (ABI %u) from C99\n", pot_version_string(), (unsigned)pot_abi_version());
  return 0;
}
