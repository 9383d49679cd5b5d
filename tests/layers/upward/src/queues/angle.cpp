// A fixture for the layer check's own test: queues reaching up into sim, spelled as a system header.
#include <fracpack/sim/alibaba.hpp>
