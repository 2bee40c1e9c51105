// The metrics-stream client with reconnects; see stream_client.hpp.
#include "stream_client.hpp"

#include <istream>

#include <fmt/format.h>

namespace loom::dash {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

StreamClient::StreamClient(std::string address, std::string token)
    : address_(loom::host::parse_stream_address(address)), token_(std::move(token)) {
  inbox_.set_status(fmt::format("connecting to {}:{}", address_.host, address_.port));
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

void StreamClient::connect() {
  auto resolver = std::make_shared<tcp::resolver>(io_);
  resolver->async_resolve(address_.host, std::to_string(address_.port),
                          [this, resolver](const boost::system::error_code& error, tcp::resolver::results_type found) {
    if (error) return lost(error.message());
    asio::async_connect(socket_, found, [this](const boost::system::error_code& connect_error, const tcp::endpoint&) {
      if (connect_error) return lost(connect_error.message());
      connected_ = true;
      ended_ = false;
      inbox_.set_status(fmt::format("connected to {}:{}", address_.host, address_.port));
      input_.consume(input_.size());
      if (!token_.empty()) outgoing_.push_front(loom::host::protocol_line(loom::host::make_auth_message(token_)));
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
      if (message.value("type", "") == "end") ended_ = true;
      if (message.value("type", "") == "error")
        inbox_.set_status("refused by the run: " + message.value("message", std::string("?")));
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
    inbox_.set_status(fmt::format("{} {}:{} ({}); reconnecting every second",
                                  ended_ ? "the run ended at" : "connection lost to", address_.host, address_.port, why));
  retry_.expires_after(std::chrono::seconds(1));
  retry_.async_wait([this](const boost::system::error_code& error) {
    if (!error) connect();
  });
}

}  // namespace loom::dash
