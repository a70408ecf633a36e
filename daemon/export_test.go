package daemon

// StartupSettle is how long after it serves skiffd drops what only its
// start-up used: the benchmarks take its resident memory at rest after it.
const StartupSettle = startupSettle
