module github.com/kdupcap/kdupcap/internal/rdkafka

go 1.26.0

require github.com/confluentinc/confluent-kafka-go/v2 v2.11.1
