// A fixture for the layer check's own test: an installed header that needs a private one and Boost.
#include <boost/asio.hpp>
#include "binpack/fit.hpp"
