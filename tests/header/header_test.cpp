// pot.h compiles as C++11 (-pedantic -Werror) and links with C linkage.
#include "pot.h"

#include <cstdio>
#include <cstring>

int main() {
  pot_digest d;
  pot_error *err = nullptr;
  if (pot_abi_version() != POT_ABI_VERSION) return 1;
  if (pot_merkle_leaf_hash(&d, nullptr, 0, &err) != POT_OK) return 2;
  char hex[2 * POT_DIGEST_SIZE + 1];
  pot_digest_to_hex(hex, &d, nullptr);
  if (std::strcmp(hex, "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d") != 0) return 3;
  if (pot_log_new(nullptr, &err) != POT_E_INVALID_ARGUMENT) return 4;
  pot_error_free(err);
  std::printf("pot %s (ABI %u) from C++\n", pot_version_string(), pot_abi_version());
  return 0;
}
