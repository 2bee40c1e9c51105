// Following a growing metrics.jsonl; see file_follower.hpp.
#include "file_follower.hpp"

#include <chrono>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace loom::dash {

nlohmann::json hello_for_replay(const std::filesystem::path& metrics_file) {
  nlohmann::json hello{{"type", "hello"}, {"run", metrics_file.parent_path().filename().string()},
                       {"source", metrics_file.string()}};
  const std::filesystem::path recipe_file = metrics_file.parent_path() / "recipe.resolved.toml";
  std::ifstream in(recipe_file);
  if (!in) return hello;
  std::stringstream text;
  text << in.rdbuf();
  hello["recipe"] = text.str();
  try {
    const toml::table recipe = toml::parse(text.str());
    hello["run"] = recipe["run"]["name"].value_or(hello["run"].get<std::string>());
    hello["total_steps"] = recipe["train"]["steps"].value_or(int64_t{0});
    hello["precision"] = recipe["precision"]["component"].value_or(std::string("fp32"));
  } catch (const toml::parse_error&) {
    // The recipe text is still shown; only the fields read from it are missing.
  }
  return hello;
}

FileFollower::FileFollower(std::filesystem::path path) : path_(std::move(path)) {
  thread_ = std::thread([this] { follow(); });
}

FileFollower::~FileFollower() {
  stop_ = true;
  thread_.join();
}

void FileFollower::follow() {
  using namespace std::chrono_literals;
  std::ifstream in;
  std::streamoff offset = 0;
  std::string partial;
  uint64_t lines = 0;
  while (!stop_) {
    std::error_code error;
    const auto size = static_cast<std::streamoff>(std::filesystem::file_size(path_, error));
    if (error) {
      inbox_.set_status(fmt::format("waiting for {} ({})", path_.string(), error.message()));
      caught_up_ = true;
      std::this_thread::sleep_for(500ms);
      continue;
    }
    if (!in.is_open() || size < offset) {  // first time, or the file was rewritten
      in.close();
      in.open(path_, std::ios::binary);
      offset = 0, lines = 0;
      partial.clear();
      inbox_.push(hello_for_replay(path_));
    }
    if (size > offset) {
      in.clear();
      in.seekg(offset);
      std::string chunk(static_cast<size_t>(size - offset), '\0');
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      chunk.resize(static_cast<size_t>(in.gcount()));
      offset += static_cast<std::streamoff>(chunk.size());
      partial += chunk;
      size_t start = 0;
      for (size_t newline; (newline = partial.find('\n', start)) != std::string::npos; start = newline + 1) {
        // A torn or foreign line is skipped, like MetricsLog does when it resumes.
        auto record = nlohmann::json::parse(partial.begin() + static_cast<std::ptrdiff_t>(start),
                                            partial.begin() + static_cast<std::ptrdiff_t>(newline), nullptr, false);
        if (!record.is_discarded()) inbox_.push(std::move(record)), ++lines;
      }
      partial.erase(0, start);  // an unfinished last line waits for the rest
      inbox_.set_status(fmt::format("replaying {} ({} records; following)", path_.string(), lines));
      continue;
    }
    caught_up_ = true;
    std::this_thread::sleep_for(200ms);
  }
}

}  // namespace loom::dash
