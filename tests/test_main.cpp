#define DOCTEST_CONFIG_IMPLEMENT
#include <csignal>

#include <doctest/doctest.h>

int main(int argc, char** argv) {
  // As `fracpack serve` does: a peer that closed its end must not kill the process that writes
  // to it (OpenSSL and the HTTP clients write without MSG_NOSIGNAL).
  std::signal(SIGPIPE, SIG_IGN);
  doctest::Context context(argc, argv);
  return context.run();
}
