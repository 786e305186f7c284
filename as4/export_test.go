package as4

// RaceEnabled tells the external tests whether the race detector runs.
const RaceEnabled = raceEnabled

// InFlight is the number of requests h is reading or answering (the
// request slots taken).
func InFlight[TTx any](h *Handler[TTx]) int { return len(h.slots) }
