module github.com/pot-sdk/pot/samples/go-verifier

go 1.22

require github.com/pot-sdk/pot/bindings/go v0.0.0

replace github.com/pot-sdk/pot/bindings/go => ../../bindings/go
