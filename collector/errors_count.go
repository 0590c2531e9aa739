package collector

import "github.com/nic-exporter/nic_exporter/internal/errclass"

// Count counts err under its reason without logging it. It is for a
// source error its collector logs itself, once and with more to say
// than the generic line (for example which privilege is missing and how
// to grant it).
func (s *SourceErrors) Count(err error) {
	reason := errclass.Reason(err)
	s.mu.Lock()
	s.byReason[reason]++
	s.mu.Unlock()
}

// CountSourceError counts err like SourceError does, but does not log it:
// the collector has logged it itself.
func (p *Poll) CountSourceError(err error) {
	if p.errs != nil {
		p.errs.Count(err)
	}
}
