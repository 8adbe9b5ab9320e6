// libFuzzer target for the torchtitan config reader and writer: any input either reads into a request's values or is
// refused with sapp::Error, and a file that reads is edited by --emit torchtitan's writer and read back (writer.hpp).
#include <cstddef>
#include <cstdint>

#include "targets.hpp"
#include "writer.hpp"

int sapp::fuzz::target_torchtitan(const std::uint8_t* data, std::size_t size) {
  return sapp::fuzz::read_and_write_back(data, size, sapp::config::EmitFormat::Torchtitan);
}
