// Names for the temporary files of atomic writes (write, then rename).
#pragma once

#include <string>

namespace pot {

// "<path>.tmp-pot.<pid>.<n>": unique per process and call, so two threads or
// two processes writing the same file at once never share a temporary file
// (the last rename wins, and each renamed file is whole).
std::string temp_path_for(const std::string &path);

}  // namespace pot
