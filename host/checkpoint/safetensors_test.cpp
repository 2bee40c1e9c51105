// safetensors reader/writer: every dtype round-trips, every malformed file is refused with a
// message naming the file and the problem, a file written by the Python tool loads with the
// values it wrote, and writes are atomic.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "checkpoint/safetensors.hpp"

namespace loom::host {
namespace {

const std::filesystem::path kFixtures = LOOM_SOURCE_FIXTURE_DIR;

std::vector<std::byte> file_image(const std::string& header, std::size_t data_bytes) {
  std::vector<std::byte> image(8);
  const std::uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) image[i] = static_cast<std::byte>((length >> (8 * i)) & 0xff);
  for (char c : header) image.push_back(static_cast<std::byte>(c));
  image.resize(image.size() + data_bytes, std::byte{0x5a});
  return image;
}

// Parses `image` and returns the error message ("" if it was accepted).
std::string refusal(const std::vector<std::byte>& image) {
  try {
    SafetensorsFile::from_bytes(image, "bad.safetensors");
  } catch (const SafetensorsError& error) {
    return error.what();
  }
  return "";
}

template <typename T>
std::vector<std::byte> raw(const std::vector<T>& values) {
  auto bytes = std::as_bytes(std::span<const T>(values));
  return {bytes.begin(), bytes.end()};
}

TEST(Safetensors, EveryDtypeRoundTripsBitExactly) {
  SafetensorsWriter writer;
  std::vector<std::pair<SafetensorsDtype, std::vector<std::int64_t>>> cases;
  for (int d = 0; d <= static_cast<int>(SafetensorsDtype::kU64); ++d) {
    const auto dtype = static_cast<SafetensorsDtype>(d);
    const std::vector<std::int64_t> shape = {2, d + 1};
    std::vector<std::byte> bytes(safetensors_dtype_size(dtype) * 2 * (d + 1));
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>((i * 37 + d) & 0xff);
    writer.add(std::string(safetensors_dtype_name(dtype)), dtype, shape, bytes);
    cases.emplace_back(dtype, shape);
  }
  writer.add_f32("scalar", {}, std::vector<float>{2.5f});
  writer.add_f32("empty", {3, 0}, std::vector<float>{});
  writer.set_metadata("format", "pt");
  const auto image = writer.serialize();

  const auto file = SafetensorsFile::from_bytes(image, "round-trip");
  ASSERT_EQ(file.tensors().size(), cases.size() + 2);
  for (const auto& [dtype, shape] : cases) {
    const auto& tensor = file.tensor(safetensors_dtype_name(dtype));
    EXPECT_EQ(tensor.dtype, dtype);
    EXPECT_EQ(tensor.shape, shape);
    ASSERT_EQ(tensor.byte_size, safetensors_dtype_size(dtype) * shape[0] * shape[1]);
    const int d = static_cast<int>(dtype);
    for (std::size_t i = 0; i < tensor.byte_size; ++i)
      ASSERT_EQ(tensor.data[i], static_cast<std::byte>((i * 37 + d) & 0xff)) << tensor.name << " byte " << i;
  }
  EXPECT_EQ(file.read_f32("scalar"), std::vector<float>{2.5f});
  EXPECT_EQ(file.tensor("scalar").element_count(), 1);
  EXPECT_EQ(file.tensor("empty").byte_size, 0u);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  // The header is padded so the data region starts 8-byte aligned.
  std::uint64_t length = 0;
  std::memcpy(&length, image.data(), 8);
  EXPECT_EQ(length % 8, 0u);
}

TEST(Safetensors, ReadF32ConvertsHalfBfloatAndDouble) {
  SafetensorsWriter writer;
  // 1.0, -2.0, 65504 (max half), 2^-24 (smallest subnormal half), -0.0, +inf
  writer.add("f16", SafetensorsDtype::kF16, {6},
             raw(std::vector<std::uint16_t>{0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x7c00}));
  writer.add("bf16", SafetensorsDtype::kBF16, {3}, raw(std::vector<std::uint16_t>{0x3f80, 0xc0a0, 0x3eaa}));
  writer.add("f64", SafetensorsDtype::kF64, {2}, raw(std::vector<double>{0.1, -3.0}));
  writer.add("i32", SafetensorsDtype::kI32, {1}, raw(std::vector<std::int32_t>{1}));
  const auto file = SafetensorsFile::from_bytes(writer.serialize(), "conversions");
  const auto f16 = file.read_f32("f16");
  EXPECT_EQ(f16[0], 1.0f);
  EXPECT_EQ(f16[1], -2.0f);
  EXPECT_EQ(f16[2], 65504.0f);
  EXPECT_EQ(f16[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(f16[4] == 0.0f && std::signbit(f16[4]));
  EXPECT_TRUE(std::isinf(f16[5]));
  EXPECT_EQ(file.read_f32("bf16"), (std::vector<float>{1.0f, -5.0f, 0.33203125f}));
  EXPECT_EQ(file.read_f32("f64"), (std::vector<float>{0.1f, -3.0f}));
  try {
    file.read_f32("i32");
    FAIL() << "an integer tensor read as float";
  } catch (const SafetensorsError& error) {
    EXPECT_NE(std::string(error.what()).find("\"i32\" has dtype I32"), std::string::npos) << error.what();
  }
  try {
    file.tensor("absent");
    FAIL();
  } catch (const SafetensorsError& error) {
    EXPECT_STREQ(error.what(), "conversions: has no tensor \"absent\"");
  }
}

TEST(Safetensors, PythonWrittenFileLoadsWithTheSameValues) {
  // tests/fixtures/safetensors/python_written.safetensors from tools/make_parity_fixtures.py:
  // floats (k - 5) / 4, signed k - 5, unsigned k, bool k % 3 == 0, in the reference writer's layout.
  const auto file = SafetensorsFile::open(kFixtures / "safetensors" / "python_written.safetensors");
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.tensors().size(), 12u);
  for (const char* name : {"f64", "f32", "f16", "bf16"}) {
    const auto values = file.read_f32(name);
    ASSERT_EQ(static_cast<std::int64_t>(values.size()), file.tensor(name).element_count());
    for (std::size_t k = 0; k < values.size(); ++k)
      EXPECT_EQ(values[k], (static_cast<float>(k) - 5) / 4) << name << "[" << k << "]";
  }
  EXPECT_EQ(file.tensor("f32").shape, (std::vector<std::int64_t>{4, 5}));
  auto check_integers = [&](const char* name, auto type_tag, std::int64_t offset) {
    using T = decltype(type_tag);
    const auto& tensor = file.tensor(name);
    ASSERT_EQ(tensor.byte_size, sizeof(T) * tensor.element_count()) << name;
    for (std::int64_t k = 0; k < tensor.element_count(); ++k) {
      T value;
      std::memcpy(&value, tensor.data + k * sizeof(T), sizeof(T));
      EXPECT_EQ(static_cast<std::int64_t>(value), k + offset) << name << "[" << k << "]";
    }
  };
  check_integers("i64", std::int64_t{}, -5);
  check_integers("i32", std::int32_t{}, -5);
  check_integers("i16", std::int16_t{}, -5);
  check_integers("i8", std::int8_t{}, -5);
  check_integers("u8", std::uint8_t{}, 0);
  const auto& flags = file.tensor("bool");
  for (std::int64_t k = 0; k < 4; ++k) EXPECT_EQ(flags.data[k] == std::byte{1}, k % 3 == 0);
  EXPECT_EQ(file.read_f32("scalar"), std::vector<float>{3.5f});
  EXPECT_TRUE(file.tensor("empty").shape == (std::vector<std::int64_t>{0, 4}));
}

struct MalformedCase {
  const char* what;
  std::vector<std::byte> image;
  const char* expected_message;
};

std::vector<MalformedCase> malformed_cases() {
  const std::string good = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  auto truncated = file_image(good, 8);
  truncated.resize(truncated.size() - 3);
  auto huge_length = file_image(good, 8);
  huge_length[5] = std::byte{0x01};  // 2^40 + ...
  auto past_end = file_image(good, 8);
  past_end[0] = static_cast<std::byte>(good.size() + 9);
  return {
      {"empty file", {}, "file is 0 bytes, shorter than the 8-byte header length"},
      {"truncated data", truncated, "data_offsets end 8 is beyond the data region of 5 bytes"},
      {"header length beyond the limit", huge_length, "exceeds the limit of 100000000 bytes"},
      {"header length beyond the file", past_end, "runs past the end of the file"},
      {"not JSON", file_image("{\"a\": [1, 2", 0), "header is not well-formed JSON"},
      {"not an object", file_image("[1, 2]  ", 0), "header does not start with '{'"},
      {"header too short", file_image("{", 0), "header length 1 is too small for a JSON object"},
      {"entry not an object", file_image(R"({"a": 3})", 0), "tensor \"a\": entry is not a JSON object"},
      {"missing field", file_image(R"({"a":{"dtype":"F32","shape":[0]}})", 0),
       "needs \"dtype\", \"shape\" and"},
      {"unknown field", file_image(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0],"x":1}})", 0),
       "unknown field \"x\""},
      {"unknown dtype", file_image(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8),
       "tensor \"a\": unknown dtype \"F33\""},
      {"negative extent", file_image(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "shape entry -2 is not a non-negative integer"},
      {"shape × dtype ≠ bytes", file_image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "dtype F32 with shape [3] needs 12 bytes but data_offsets span 8"},
      {"overflowing shape",
       file_image(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8),
       "needs more than 2^64 bytes"},
      {"offsets out of bounds", file_image(R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}})", 8),
       "data_offsets end 16 is beyond the data region of 8 bytes"},
      {"offsets reversed", file_image(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 8),
       "data_offsets begin 4 > end 0"},
      {"offsets not a pair", file_image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", 1),
       "is not [begin, end] of non-negative integers"},
      {"overlap",
       file_image(
           R"({"a":{"dtype":"U8","shape":[6],"data_offsets":[0,6]},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
           8),
       "tensor \"b\" [4, 8) overlaps tensor \"a\" (ends at 6)"},
      {"gap",
       file_image(
           R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
           8),
       "gap of 2 unused bytes before tensor \"b\" at data offset 2"},
      {"trailing bytes", file_image(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 8),
       "4 trailing bytes after the last tensor"},
      {"duplicate names",
       file_image(
           R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
           8),
       "header has the key \"a\" more than once"},
      {"duplicate field",
       file_image(R"({"a":{"dtype":"U8","dtype":"F32","shape":[4],"data_offsets":[0,4]}})", 4),
       "header has the key \"dtype\" more than once"},
      {"metadata not strings", file_image(R"({"__metadata__":{"format":1}})", 0),
       "__metadata__ value of \"format\" is not a string"},
  };
}

TEST(Safetensors, EveryMalformedFileIsRefusedWithAClearMessage) {
  for (const auto& c : malformed_cases()) {
    const std::string message = refusal(c.image);
    ASSERT_FALSE(message.empty()) << c.what << ": accepted";
    EXPECT_EQ(message.rfind("bad.safetensors: not a valid safetensors file: ", 0), 0u)
        << c.what << ": " << message;
    EXPECT_NE(message.find(c.expected_message), std::string::npos) << c.what << ": " << message;
  }
}

TEST(Safetensors, WellFormedEdgeCasesAreAccepted) {
  EXPECT_EQ(refusal(file_image("{}", 0)), "");
  EXPECT_EQ(refusal(file_image(R"({"__metadata__":{"k":"v"}})", 0)), "");
  // Zero-size tensors may share an offset; order in the header need not follow the data.
  EXPECT_EQ(
      refusal(file_image(
          R"({"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]},"z":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]},"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
          8)),
      "");
  const auto file = SafetensorsFile::from_bytes(
      file_image(
          R"({"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]},"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
          8),
      "ordered");
  EXPECT_EQ(file.tensors()[0].name, "a");  // listed in data order
  EXPECT_EQ(file.tensors()[1].name, "b");
}

TEST(Safetensors, WriterRefusesInconsistentTensors) {
  SafetensorsWriter writer;
  writer.add_f32("x", {2}, std::vector<float>{1, 2});
  EXPECT_THROW(writer.add_f32("x", {1}, std::vector<float>{1}), SafetensorsError);
  EXPECT_THROW(writer.add_f32("__metadata__", {1}, std::vector<float>{1}), SafetensorsError);
  EXPECT_THROW(writer.add_f32("y", {3}, std::vector<float>{1, 2}), SafetensorsError);
}

TEST(Safetensors, WriteIsAtomicAndReplacesTheFile) {
  const auto directory =
      std::filesystem::temp_directory_path() / ("loom-safetensors-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  const auto path = directory / "model.safetensors";
  { std::ofstream(path) << "old contents"; }
  SafetensorsWriter writer;
  writer.add_f32("w", {2, 2}, std::vector<float>{1, 2, 3, 4});
  writer.set_metadata("format", "pt");
  writer.write(path);
  const auto file = SafetensorsFile::open(path);
  EXPECT_EQ(file.read_f32("w"), (std::vector<float>{1, 2, 3, 4}));
  std::size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) entries += entry.exists();
  EXPECT_EQ(entries, 1u) << "a temporary file was left behind";
  EXPECT_THROW(writer.write(directory / "no-such-dir" / "x.safetensors"), std::runtime_error);
  std::filesystem::remove_all(directory);
}

TEST(Safetensors, OpenNamesTheFileWhenItCannotBeRead) {
  try {
    SafetensorsFile::open("/nonexistent/model.safetensors");
    FAIL();
  } catch (const SafetensorsError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("/nonexistent/model.safetensors: cannot open", 0), 0u)
        << error.what();
  }
}

}  // namespace
}  // namespace loom::host
