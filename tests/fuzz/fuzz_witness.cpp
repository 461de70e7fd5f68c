// A witness reveal against a commitment: the statement's JSON text, salt
// and identity all from the input.
#include <nlohmann/json.hpp>

#include "fuzz_common.h"
#include "witness/statement.h"

POT_FUZZ_TARGET({
  if (input.size() < 34) return 0;
  pot::hash::Digest commitment;
  std::copy(input.begin(), input.begin() + 32, commitment.bytes.begin());
  pot::ByteView rest = input.subspan(32);
  const size_t salt_len = rest[0] % 80;
  rest = rest.subspan(1);
  if (rest.size() < salt_len + 1) return 0;
  const pot::ByteView salt = rest.first(salt_len);
  rest = rest.subspan(salt_len);
  const size_t id_len = rest[0];
  rest = rest.subspan(1);
  if (rest.size() < id_len) return 0;
  const pot::ByteView identity = rest.first(id_len);
  rest = rest.subspan(id_len);
  const nlohmann::json j = nlohmann::json::parse(rest.begin(), rest.end(), nullptr, false);
  if (j.is_discarded()) return 0;
  pot::witness::verify_reveal(commitment, pot::witness::Statement::from_json(j), salt, identity);
})
