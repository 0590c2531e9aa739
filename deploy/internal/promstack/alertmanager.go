package promstack

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// AlertmanagerOptions say how AlertmanagerConfig changes the shipped
// configuration.
type AlertmanagerOptions struct {
	// WebhookBase is the URL of a webhook receiver ("http://127.0.0.1:9095");
	// every receiver's webhooks are pointed at WebhookBase/<receiver name>.
	WebhookBase string
	// GroupTiming, if set, replaces every group_wait and group_interval of
	// the routing tree (and sets both on its root), so notifications
	// arrive in seconds. Empty keeps the shipped timings.
	GroupTiming string
	// DropInhibitRules removes the inhibit rules, so every alert is
	// delivered.
	DropInhibitRules bool
}

// AlertmanagerConfig returns the Alertmanager configuration shipped (the
// YAML of deploy/alertmanager/alertmanager.yml) changed as o says. The
// routing tree, its matchers and everything else in the file are kept.
func AlertmanagerConfig(shipped []byte, o AlertmanagerOptions) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(shipped, &cfg); err != nil {
		return nil, fmt.Errorf("alertmanager configuration: %w", err)
	}
	if o.DropInhibitRules {
		delete(cfg, "inhibit_rules")
	}
	route, ok := cfg["route"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("alertmanager configuration: no route")
	}
	if o.GroupTiming != "" {
		if err := setGroupTiming(route, o.GroupTiming, true); err != nil {
			return nil, err
		}
	}
	receivers, _ := cfg["receivers"].([]any)
	for _, r := range receivers {
		rc, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("alertmanager configuration: a receiver is not a mapping: %v", r)
		}
		name, _ := rc["name"].(string)
		hooks, _ := rc["webhook_configs"].([]any)
		for _, h := range hooks {
			m, ok := h.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("alertmanager configuration: receiver %s: a webhook is not a mapping", name)
			}
			m["url"] = o.WebhookBase + "/" + name
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("alertmanager configuration: %w", err)
	}
	return out, nil
}

// setGroupTiming sets group_wait and group_interval to d in route, where
// they are set or route is the root, and in every route below it.
func setGroupTiming(route map[string]any, d string, root bool) error {
	for _, k := range []string{"group_wait", "group_interval"} {
		if _, ok := route[k]; ok || root {
			route[k] = d
		}
	}
	subs, _ := route["routes"].([]any)
	for _, sub := range subs {
		m, ok := sub.(map[string]any)
		if !ok {
			return fmt.Errorf("alertmanager configuration: a route is not a mapping: %v", sub)
		}
		if err := setGroupTiming(m, d, false); err != nil {
			return err
		}
	}
	return nil
}
