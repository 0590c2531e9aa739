package demo

import (
	"fmt"
	"strings"
	"time"
)

// The AER statistics of the ConnectX-7 functions, as Linux 6.1 prints
// them (drivers/pci/pcie/aer.c, aer_stats_dev_attr): one line per named
// error type and the TOTAL_ERR_* line last. The counters move with the
// faults whose kernel log lines (kmsg.go) report AER messages for
// 0000:08:00.1:
//   - pcie_aer (one uncorrectable non-fatal completion timeout per
//     activation) adds one ERR_NONFATAL message with CmpltTO;
//   - pcie_aer_corrected adds a burst of aerCorrectedBurst ERR_COR
//     messages (receiver errors) at its start and every
//     aerCorrectedEvery while it lasts; the kernel logs one "Multiple
//     Corrected error message received" report per burst.
const (
	aerCorrectedBurst = 30
	aerCorrectedEvery = 10 * time.Second
	// aerBootCorrected are the receiver errors of link training at boot,
	// which a healthy host keeps from then on.
	aerBootCorrected = 2
)

var (
	aerCorrectableNames   = []string{"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"}
	aerUncorrectableNames = []string{"Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked"}
)

// aerFile renders one AER statistics attribute with the given per-type
// counts (absent types are 0) and total.
func aerFile(names []string, counts map[string]uint64, totalName string, total uint64) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s %d\n", n, counts[n])
	}
	fmt.Fprintf(&b, "%s %d\n", totalName, total)
	return b.String()
}

// aerCorrectedBursts returns how many bursts of corrected errors the
// pcie_aer_corrected fault has sent: one when it starts and one every
// aerCorrectedEvery while it lasts, like the log lines of kmsg.go.
func (h *Host) aerCorrectedBursts() uint64 {
	var n uint64
	for _, span := range h.Spans("pcie_aer_corrected") {
		n += 1 + uint64(span/aerCorrectedEvery)
	}
	return n
}

// updateAER writes the AER statistics of both ConnectX-7 functions.
func (h *Host) updateAER() error {
	for _, dev := range []string{ibDev, ethDev} {
		cor := uint64(aerBootCorrected)
		var nonfatal uint64
		if dev == ethDev {
			cor += aerCorrectedBurst * h.aerCorrectedBursts()
			nonfatal = uint64(h.Started("pcie_aer"))
		}
		files := map[string]string{
			"aer_dev_correctable": aerFile(aerCorrectableNames, map[string]uint64{"RxErr": cor}, "TOTAL_ERR_COR", cor),
			"aer_dev_nonfatal":    aerFile(aerUncorrectableNames, map[string]uint64{"CmpltTO": nonfatal}, "TOTAL_ERR_NONFATAL", nonfatal),
			"aer_dev_fatal":       aerFile(aerUncorrectableNames, nil, "TOTAL_ERR_FATAL", 0),
		}
		for name, content := range files {
			if err := h.write(dev+"/"+name, content); err != nil {
				return err
			}
		}
	}
	return nil
}
