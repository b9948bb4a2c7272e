// How the CLI renders errors.
#include <ostream>

#include "paddlec/driver/driver.h"

namespace paddlec::driver {

void PrintError(const Error& e, std::ostream& err) { err << e.Render(); }

}  // namespace paddlec::driver
