// Package logging builds the exporter's zap logger so that it writes the
// log formats of the Prometheus ecosystem: logfmt or JSON lines with the
// time, level, source, msg keys that prometheus/common/promslog and
// log/slog use, so that one log pipeline reads Prometheus, its exporters
// and nic_exporter alike.
//
// The code logs through zap; the returned logger's core hands every entry
// to a log/slog handler, which does the formatting.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Formats returns the accepted values of Config.Format: logfmt and json as
// in the Prometheus ecosystem, and console, an alias of logfmt kept for
// command lines written before logfmt existed.
func Formats() []string { return []string{"logfmt", "json", "console"} }

// Levels returns the accepted values of Config.Level, lowest first.
func Levels() []string { return []string{"debug", "info", "warn", "error"} }

// Config selects what a logger writes and how.
type Config struct {
	// Level is the lowest severity written, one of Levels.
	Level string
	// Format is the line format, one of Formats.
	Format string
}

// New returns a logger that writes the entries of cfg.Level and above to
// w, one line each in cfg.Format. The logger records its callers, which
// become the source key.
func New(cfg Config, w io.Writer) (*zap.Logger, error) {
	var lvl zapcore.Level
	switch cfg.Level {
	case "debug", "info", "warn", "error":
		if err := lvl.Set(cfg.Level); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown log level %q: want one of %v", cfg.Level, Levels())
	}
	opts := &slog.HandlerOptions{
		Level:       slog.LevelDebug, // the core filters by level
		AddSource:   true,
		ReplaceAttr: replaceAttr,
	}
	var h slog.Handler
	switch cfg.Format {
	case "logfmt", "console":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("unknown log format %q: want one of %v", cfg.Format, Formats())
	}
	return zap.New(&core{LevelEnabler: lvl, h: h}, zap.AddCaller()), nil
}

// replaceAttr does what promslog's default ReplaceAttr does: the source is
// file:line of the file's base name, a duration is written as Go writes it
// ("1m30s"), and an entry's own field named time, level or source is
// renamed logged_<key> rather than duplicating the key. An entry without a
// caller (one that came through a log/slog handler that records none) has
// no source key rather than an empty one.
func replaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case slog.TimeKey:
			if _, ok := a.Value.Any().(time.Time); !ok {
				a.Key = "logged_" + a.Key
			}
		case slog.LevelKey:
			if _, ok := a.Value.Any().(slog.Level); !ok {
				a.Key = "logged_" + a.Key
			}
		case slog.SourceKey:
			src, ok := a.Value.Any().(*slog.Source)
			if !ok {
				a.Key = "logged_" + a.Key
				break
			}
			if src.File == "" {
				return slog.Attr{}
			}
			a.Value = slog.StringValue(filepath.Base(src.File) + ":" + strconv.Itoa(src.Line))
		}
	}
	if d, ok := a.Value.Any().(time.Duration); ok {
		a.Value = slog.StringValue(d.String())
	}
	return a
}

// core is a zapcore.Core that writes through a slog.Handler.
type core struct {
	zapcore.LevelEnabler
	h slog.Handler
}

var _ zapcore.Core = (*core)(nil)

// With returns a core whose entries carry fields.
func (c *core) With(fields []zapcore.Field) zapcore.Core {
	return &core{LevelEnabler: c.LevelEnabler, h: c.h.WithAttrs(attrs(nil, fields))}
}

// Check adds c to ce when c writes entries of e's level.
func (c *core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write hands one entry to the slog handler. A named logger's name
// becomes the component key, as Prometheus names its parts.
func (c *core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	var pc uintptr
	if e.Caller.Defined {
		pc = e.Caller.PC
	}
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, pc)
	as := make([]slog.Attr, 0, len(fields)+2)
	if e.LoggerName != "" {
		as = append(as, slog.String("component", e.LoggerName))
	}
	as = attrs(as, fields)
	if e.Stack != "" {
		as = append(as, slog.String("stacktrace", e.Stack))
	}
	r.AddAttrs(as...)
	if err := c.h.Handle(context.Background(), r); err != nil {
		return fmt.Errorf("writing a log entry: %w", err)
	}
	return nil
}

// Sync does nothing: the handlers write every line as it comes.
func (c *core) Sync() error { return nil }

// slogLevel maps zap's levels to slog's; DPanic, Panic and Fatal, which
// slog lacks, are written as errors.
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

// attrs appends the fields to as in their order. Each field is encoded by
// zap itself (so errors, stringers, arrays and objects come out as zap
// writes them); an error may add a second key, errorVerbose. Namespaces
// are flattened.
func attrs(as []slog.Attr, fields []zapcore.Field) []slog.Attr {
	for _, f := range fields {
		if f.Type == zapcore.NamespaceType {
			continue
		}
		enc := zapcore.NewMapObjectEncoder()
		f.AddTo(enc)
		keys := make([]string, 0, len(enc.Fields))
		for k := range enc.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			as = append(as, slog.Any(k, enc.Fields[k]))
		}
	}
	return as
}
