module kcp-rs.dev/testbed/peers/init-agent

go 1.24.0

tool github.com/kcp-dev/init-agent/cmd/init-agent

require github.com/kcp-dev/init-agent v0.1.0
