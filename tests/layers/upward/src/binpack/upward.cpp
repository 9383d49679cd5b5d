// A fixture for the layer check's own test: the bin-packing core reaching up into the server.
#include "fracpack/server/serve.hpp"
