package prom

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Sample is one series of an instant query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query runs an instant query at the current time. A scalar result is one Sample without
// labels; an error names Prometheus's own error.
func (s *Stack) Query(ctx context.Context, q string) ([]Sample, error) {
	var body struct {
		Status, Error string
		Data          struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		}
	}
	if err := s.get(ctx, s.Prometheus+"/api/v1/query?query="+url.QueryEscape(q), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, body.Error)
	}
	switch body.Data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string
			Value  [2]any
		}
		if err := json.Unmarshal(body.Data.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(vec))
		for _, v := range vec {
			f, err := value(v.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Labels: v.Metric, Value: f})
		}
		return out, nil
	case "scalar":
		var sc [2]any
		if err := json.Unmarshal(body.Data.Result, &sc); err != nil {
			return nil, err
		}
		f, err := value(sc)
		return []Sample{{Value: f}}, err
	}
	return nil, fmt.Errorf("query %q: result type %q", q, body.Data.ResultType)
}

// value reads [time, "value"]; the value is a string so that NaN and ±Inf survive JSON.
func value(v [2]any) (float64, error) {
	str, ok := v[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v[1])
	}
	return strconv.ParseFloat(str, 64)
}

// Alert is an alert as Alertmanager's v2 API lists it.
type Alert struct {
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
	EndsAt   time.Time         `json:"endsAt"`
	Status   struct {
		State string `json:"state"`
	} `json:"status"`
}

// Firing is true while the alert is active: not resolved (its end still ahead), not
// silenced or inhibited.
func (a Alert) Firing(now time.Time) bool {
	return a.Status.State == "active" && (a.EndsAt.IsZero() || a.EndsAt.After(now))
}

// Alerts lists Alertmanager's alerts (/api/v2/alerts).
func (s *Stack) Alerts(ctx context.Context) ([]Alert, error) {
	var out []Alert
	err := s.get(ctx, s.Alertmanager+"/api/v2/alerts", &out)
	return out, err
}

// RuleAlert is an alert as Prometheus's rule evaluation holds it (pending or firing).
type RuleAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

// RuleAlerts lists Prometheus's own pending and firing alerts (/api/v1/alerts).
func (s *Stack) RuleAlerts(ctx context.Context) ([]RuleAlert, error) {
	var body struct {
		Status, Error string
		Data          struct{ Alerts []RuleAlert }
	}
	if err := s.get(ctx, s.Prometheus+"/api/v1/alerts", &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("alerts: %s", body.Error)
	}
	return body.Data.Alerts, nil
}

func (s *Stack) get(ctx context.Context, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	// Prometheus answers a bad query with 400 and its error in the usual JSON body.
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnprocessableEntity {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, data)
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("GET %s: %w: %s", u, err, data)
	}
	return nil
}
