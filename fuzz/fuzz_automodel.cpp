// libFuzzer target for the NeMo AutoModel config reader and writer: any input either reads into a request's values or is
// refused with sapp::Error, and a file that reads is edited by --emit automodel's writer and read back (writer.hpp).
#include <cstddef>
#include <cstdint>

#include "writer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return sapp::fuzz::read_and_write_back(data, size, sapp::config::EmitFormat::AutoModel);
}
