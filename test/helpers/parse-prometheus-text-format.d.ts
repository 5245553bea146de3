// The parser ships no types: what the metrics test uses of it.
declare module 'parse-prometheus-text-format' {
  interface Family {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    metrics: {
      labels?: Record<string, string>;
      value?: string;
      count?: string;
      sum?: string;
      buckets?: Record<string, string>;
    }[];
  }
  export default function parsePrometheusTextFormat(text: string): Family[];
}
