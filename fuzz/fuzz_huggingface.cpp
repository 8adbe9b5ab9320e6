// libFuzzer target for the huggingface config reader: any input either reads into a request's values or is refused
// with sapp::Error. Nothing else may happen.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "core/error.hpp"
#include "targets.hpp"

int sapp::fuzz::target_huggingface(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)sapp::config::read_text(text, "fuzz", sapp::config::Format::HuggingFace);
  } catch (const sapp::Error&) {
  }
  return 0;
}
