package infiniband

// RelistEvery is relistEvery for the external tests.
const RelistEvery = relistEvery
