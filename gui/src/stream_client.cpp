// The metrics-stream client with reconnects; see stream_client.hpp.
#include "stream_client.hpp"

#include <istream>
#include <stdexcept>

#include <fmt/format.h>

#include "message_fields.hpp"
#include "metrics/metrics_stream_credentials.hpp"

namespace loom::dash {
namespace asio = boost::asio;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;

namespace {

// `loom run` puts run directories under ./runs unless the recipe says otherwise ([run] output_dir).
const char* const kDefaultRunsRoot = "runs";

}  // namespace

StreamClient::StreamClient(std::string target, std::string token) : given_token_(std::move(token)) {
  std::error_code error;
  if (fs::is_directory(target, error)) {
    run_directory_ = fs::path(target);
  } else {
    try {
      fixed_address_ = loom::host::parse_stream_address(target);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(
          fmt::format("--attach {}: neither a run directory nor HOST:PORT ({})", target, e.what()));
    }
  }
  inbox_.set_status(fmt::format("connecting to {}", target));
  asio::post(io_, [this] { connect(); });
  thread_ = std::thread([this] {
    auto work = asio::make_work_guard(io_);
    io_.run();
  });
}

StreamClient::~StreamClient() {
  io_.stop();
  thread_.join();
}

std::string StreamClient::address_text() const {
  return fmt::format("{}:{}", current_.address.host, current_.address.port);
}

std::optional<StreamClient::Attachment> StreamClient::resolve(std::string& why_not) const {
  Attachment next;
  fs::path token_directory;
  if (run_directory_) {
    const loom::host::FoundStreamCredentials found = loom::host::read_stream_credentials(*run_directory_);
    if (found.endpoint.empty()) {
      why_not = fmt::format("no {}: the run is not listening", (*run_directory_ / loom::host::kStreamEndpointFile).string());
      return std::nullopt;
    }
    try {
      next.address = loom::host::parse_stream_address(found.endpoint);
    } catch (const std::invalid_argument& e) {
      why_not = e.what();
      return std::nullopt;
    }
    token_directory = *run_directory_;
  } else {
    next.address = *fixed_address_;
    if (given_token_.empty()) token_directory = loom::host::find_run_directory_listening_on(next.address, kDefaultRunsRoot);
  }
  if (!given_token_.empty()) {
    next.token = given_token_;
  } else if (!token_directory.empty()) {
    const loom::host::FoundStreamCredentials found = loom::host::read_stream_credentials(token_directory);
    next.token = found.token;
    next.token_note = found.token_problem;
  } else {
    next.token_note = fmt::format(
        "no token: no run under ./{} listens on {}:{}; attach by run directory (loom-dash --attach runs/NAME) or "
        "give --token or LOOM_METRICS_TOKEN",
        kDefaultRunsRoot, next.address.host, next.address.port);
  }
  return next;
}

void StreamClient::connect() {
  std::string why_not;
  const std::optional<Attachment> next = resolve(why_not);
  if (!next) {
    inbox_.set_status(fmt::format("waiting for {}: {}; retrying every second", run_directory_->string(), why_not));
    return retry_after(std::chrono::seconds(1));
  }
  current_ = *next;
  auto resolver = std::make_shared<tcp::resolver>(io_);
  resolver->async_resolve(current_.address.host, std::to_string(current_.address.port),
                          [this, resolver](const boost::system::error_code& error, tcp::resolver::results_type found) {
    if (error) return lost(error.message());
    asio::async_connect(socket_, found, [this](const boost::system::error_code& connect_error, const tcp::endpoint&) {
      if (connect_error) return lost(connect_error.message());
      connected_ = true;
      ended_ = false;
      refused_ = false;
      inbox_.set_status(current_.token.empty()
                            ? fmt::format("connected to {} ({})", address_text(), current_.token_note)
                            : fmt::format("connected to {}", address_text()));
      input_.consume(input_.size());
      if (!current_.token.empty())
        outgoing_.push_front(loom::host::protocol_line(loom::host::make_auth_message(current_.token)));
      write_next();
      read();
    });
  });
}

void StreamClient::read() {
  asio::async_read_until(socket_, input_, '\n', [this](const boost::system::error_code& error, size_t) {
    if (error) return lost(error == asio::error::eof ? "closed by the run" : error.message());
    std::istream in(&input_);
    std::string line;
    std::getline(in, line);
    auto message = nlohmann::json::parse(line, nullptr, false);
    if (!message.is_discarded()) {
      const std::string type = text_field(message, "type", "");
      if (type == "end") ended_ = true;
      if (type == "error") {
        refused_ = true;
        const std::string note = current_.token.empty() ? " (" + current_.token_note + ")" : "";
        inbox_.set_status("refused by the run: " + text_field(message, "message", "?") + note);
      }
      inbox_.push(std::move(message));
    }
    read();
  });
}

void StreamClient::send(loom::host::RunCommand command) {
  asio::post(io_, [this, command] {
    if (!connected_) {
      inbox_.push(loom::host::make_error_message(
          fmt::format("not connected: {} was not sent", loom::host::run_command_name(command))));
      return;
    }
    outgoing_.push_back(loom::host::protocol_line(loom::host::make_control_message(command, next_id_++)));
    if (outgoing_.size() == 1) write_next();
  });
}

void StreamClient::write_next() {
  if (outgoing_.empty() || !connected_) return;
  asio::async_write(socket_, asio::buffer(outgoing_.front()), [this](const boost::system::error_code& error, size_t) {
    if (error) return;  // the read side notices and reconnects
    outgoing_.pop_front();
    write_next();
  });
}

void StreamClient::lost(const std::string& why) {
  connected_ = false;
  outgoing_.clear();
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (inbox_.status().rfind("refused", 0) != 0)  // a refusal stays visible while retrying
    inbox_.set_status(fmt::format("{} {} ({}); reconnecting every second",
                                  ended_ ? "the run ended at" : "connection lost to", address_text(), why));
  // A refused client waits longer, so a wrong token does not knock on the run's door every second.
  retry_after(std::chrono::seconds(refused_ ? 5 : 1));
}

void StreamClient::retry_after(std::chrono::seconds delay) {
  retry_.expires_after(delay);
  retry_.async_wait([this](const boost::system::error_code& error) {
    if (!error) connect();
  });
}

}  // namespace loom::dash
