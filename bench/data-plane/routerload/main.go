// Command routerload is the router benchmark's backend and its WebSocket and gRPC load generator
// (HTTP load comes from wrk). It is bench scaffolding, not part of the product.
//
//	routerload serve --listen 127.64.0.5,127.64.0.6 --http-port 8888 --grpc-port 9000
//	routerload ws   --url ws://127.0.0.1:8080/ws --header X-Sandbox-ID=a ... --concurrency 10 --duration 10s --size 1024
//	routerload grpc --addr 127.0.0.1:8080 --header X-Sandbox-ID=a ... --concurrency 10 --duration 10s --size 1024
//
// serve answers GET /small (a 64-byte body), GET /blob (1 MiB), POST /echo (the body back) and
// GET /ws (WebSocket echo) on every listed address, and a gRPC bidirectional echo stream
// (/bench.Echo/Echo, raw bytes, no protobuf) on the gRPC port over h2c. ws and grpc print one JSON
// object: {"requests", "errors", "firstError", "seconds", "latenciesMs": {"p50", "p99"}, "bytes"}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
)

const blobBytes = 1 << 20

func main() {
	if len(os.Args) < 2 {
		fail("usage: routerload serve|ws|grpc [flags]")
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2:])
	case "ws":
		report(loadWS(os.Args[2:]))
	case "grpc":
		report(loadGRPC(os.Args[2:]))
	default:
		fail("unknown command " + os.Args[1] + ": want serve, ws or grpc")
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "routerload:", msg)
	os.Exit(2)
}

// rawCodec passes gRPC messages through as bytes, so the stream needs no generated code.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append((*(v.(*[]byte)))[:0], data...)
	return nil
}
func (rawCodec) Name() string { return "raw" }

var echoStream = grpc.StreamDesc{StreamName: "Echo", ServerStreams: true, ClientStreams: true}

func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1", "comma-separated addresses to listen on")
	httpPort := fs.Int("http-port", 8888, "HTTP and WebSocket port")
	grpcPort := fs.Int("grpc-port", 9000, "gRPC (h2c) port")
	_ = fs.Parse(args)

	small := []byte(strings.Repeat("s", 63) + "\n")
	blob := make([]byte, blobBytes)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	upgrader := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /small", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("content-type", "text/plain")
		_, _ = w.Write(small)
	})
	mux.HandleFunc("GET /blob", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("content-type", "application/octet-stream")
		_, _ = w.Write(blob)
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		// Read it all first: a Go HTTP/1.1 handler cannot read the body once it has written the response.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("content-type", "application/octet-stream")
		_, _ = w.Write(body)
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			kind, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if c.WriteMessage(kind, msg) != nil {
				return
			}
		}
	})
	encoding.RegisterCodec(rawCodec{})
	gs := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	gs.RegisterService(&grpc.ServiceDesc{
		ServiceName: "bench.Echo",
		HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{{StreamName: "Echo", ServerStreams: true, ClientStreams: true, Handler: func(_ any, s grpc.ServerStream) error {
			for {
				var msg []byte
				if err := s.RecvMsg(&msg); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
				if err := s.SendMsg(&msg); err != nil {
					return err
				}
			}
		}}},
	}, nil)
	errs := make(chan error)
	for _, addr := range strings.Split(*listen, ",") {
		h, err := net.Listen("tcp", net.JoinHostPort(addr, fmt.Sprint(*httpPort)))
		if err != nil {
			fail(err.Error())
		}
		g, err := net.Listen("tcp", net.JoinHostPort(addr, fmt.Sprint(*grpcPort)))
		if err != nil {
			fail(err.Error())
		}
		go func() { errs <- http.Serve(h, mux) }()
		go func() { errs <- gs.Serve(g) }()
	}
	fmt.Println("serving")
	fail((<-errs).Error())
}

// headers is a repeatable --header Name=value flag.
type headers []string

func (h *headers) String() string     { return strings.Join(*h, ",") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func (h headers) pairs() [][2]string {
	out := make([][2]string, 0, len(h))
	for _, kv := range h {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fail("--header wants Name=value, got " + kv)
		}
		out = append(out, [2]string{k, v})
	}
	return out
}

type loadFlags struct {
	headers     headers
	concurrency int
	duration    time.Duration
	size        int
}

func (l *loadFlags) register(fs *flag.FlagSet) {
	fs.Var(&l.headers, "header", "a request header Name=value (repeatable)")
	fs.IntVar(&l.concurrency, "concurrency", 1, "clients, each with its own connection")
	fs.DurationVar(&l.duration, "duration", 10*time.Second, "how long to send")
	fs.IntVar(&l.size, "size", 1024, "message bytes")
}

type result struct {
	Requests    int                `json:"requests"`
	Errors      int                `json:"errors"`
	FirstError  string             `json:"firstError,omitempty"`
	Seconds     float64            `json:"seconds"`
	Bytes       int64              `json:"bytes"`
	LatenciesMs map[string]float64 `json:"latenciesMs"`
}

// run starts `concurrency` clients, each calling `client(i, deadline)` once, and gathers what they measured.
func run(l loadFlags, client func(i int, deadline time.Time) ([]time.Duration, error)) result {
	deadline := time.Now().Add(l.duration)
	started := time.Now()
	var mu sync.Mutex
	var all []time.Duration
	res := result{}
	var wg sync.WaitGroup
	for i := 0; i < l.concurrency; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lat, err := client(i, deadline)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			if err != nil {
				res.Errors++
				if res.FirstError == "" {
					res.FirstError = err.Error()
				}
			}
		}(i)
	}
	wg.Wait()
	res.Seconds = time.Since(started).Seconds()
	res.Requests = len(all)
	res.Bytes = int64(len(all)) * int64(l.size) * 2
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	res.LatenciesMs = map[string]float64{"p50": pct(0.5), "p99": pct(0.99)}
	return res
}

func report(r result) {
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

func payload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// parseLoad parses a load command's flags, its target flag among them, and makes its message.
func parseLoad(command string, args []string, target, usage string) (loadFlags, string, []byte) {
	fs := flag.NewFlagSet(command, flag.ExitOnError)
	var l loadFlags
	l.register(fs)
	to := fs.String(target, "", usage)
	_ = fs.Parse(args)
	return l, *to, payload(l.size)
}

func loadWS(args []string) result {
	l, url, msg := parseLoad("ws", args, "url", "ws:// URL")
	return run(l, func(_ int, deadline time.Time) ([]time.Duration, error) {
		h := http.Header{}
		for _, kv := range l.headers.pairs() {
			h.Set(kv[0], kv[1])
		}
		c, _, err := websocket.DefaultDialer.Dial(url, h)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		return echoLoop(deadline, len(msg), func() ([]byte, error) {
			if err := c.WriteMessage(websocket.BinaryMessage, msg); err != nil {
				return nil, err
			}
			_, got, err := c.ReadMessage()
			return got, err
		})
	})
}

func loadGRPC(args []string) result {
	l, addr, msg := parseLoad("grpc", args, "addr", "host:port (h2c)")
	return run(l, func(_ int, deadline time.Time) ([]time.Duration, error) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		md := metadata.MD{}
		for _, kv := range l.headers.pairs() {
			md.Set(strings.ToLower(kv[0]), kv[1])
		}
		ctx, cancel := context.WithDeadline(metadata.NewOutgoingContext(context.Background(), md), deadline.Add(10*time.Second))
		defer cancel()
		s, err := conn.NewStream(ctx, &echoStream, "/bench.Echo/Echo")
		if err != nil {
			return nil, err
		}
		defer func() { _ = s.CloseSend() }()
		return echoLoop(deadline, len(msg), func() ([]byte, error) {
			out := msg
			if err := s.SendMsg(&out); err != nil {
				return nil, err
			}
			var got []byte
			err := s.RecvMsg(&got)
			return got, err
		})
	})
}

// echoLoop sends and awaits one echo at a time until the deadline, timing each round trip.
func echoLoop(deadline time.Time, size int, roundTrip func() ([]byte, error)) ([]time.Duration, error) {
	var lat []time.Duration
	for time.Now().Before(deadline) {
		t := time.Now()
		got, err := roundTrip()
		if err != nil {
			return lat, err
		}
		if len(got) != size {
			return lat, fmt.Errorf("echo of %d bytes came back as %d", size, len(got))
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}
