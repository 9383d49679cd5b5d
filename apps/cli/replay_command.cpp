// fracpack replay: drive a running server through Filter → Prioritize → Bind, as a scheduler would.
#include "commands.hpp"
#include "fracpack/server/serve.hpp"

namespace fracpack::cli {
namespace {

class ReplayCommand : public Command {
 public:
  explicit ReplayCommand(CLI::App& app) {
    app_ = app.add_subcommand("replay", "Drive a running server through Filter → Prioritize → Bind");
    app_->add_option("--server", replay_.server, "grpc://host:port (or host:port) of --grpc, http://host:port of --http")
        ->required();
    app_->add_option("--tls-ca", replay_.tls_ca, "PEM CA that signed the server certificate (grpc:// with TLS, https://)")
        ->check(CLI::ExistingFile);
    app_->add_option("--token-file", replay_.token_file, "File holding the bearer token to send (serve --token-file)")
        ->check(CLI::ExistingFile);
    app_->add_option("--tls-cert", replay_.tls_cert, "Client certificate (mutual TLS)")->check(CLI::ExistingFile);
    app_->add_option("--tls-key", replay_.tls_key, "Client key (mutual TLS)")->check(CLI::ExistingFile);
    app_->add_option("--pods", replay_.pods_file, "Pods to replay, YAML or JSON (- for standard input)")->required()->check(input_file());
    app_->add_flag("!--no-progress", replay_.progress, "No progress bar");
  }

  int run() override { return replay(replay_); }

 private:
  ReplayOptions replay_;
};

}  // namespace

std::unique_ptr<Command> add_replay(CLI::App& app) { return std::make_unique<ReplayCommand>(app); }

}  // namespace fracpack::cli
