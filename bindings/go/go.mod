module github.com/pot-sdk/pot/bindings/go

go 1.22
