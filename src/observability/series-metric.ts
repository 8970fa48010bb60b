/**
 * A Prometheus metric whose series are plain cells the hot path bumps with one addition, exported in
 * prom-client's format when the registry is scraped. prom-client's own metrics hash the label set on every
 * call (its bound children too); at several metrics per job that cost more than the rest of a no-op job's
 * bookkeeping, and the budget for metrics is 3 %.
 */
export type SeriesType = 'counter' | 'gauge' | 'histogram';

export class SeriesCell {
  /** Counter or gauge value; for a histogram, the sum of observations. */
  value = 0;
  count = 0;
  /** Per-bucket (not cumulative) counts; the last one is above every bound. */
  readonly buckets: number[] | undefined;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[] | undefined,
  ) {
    this.buckets = bounds ? new Array<number>(bounds.length + 1).fill(0) : undefined;
  }

  inc(by = 1): void {
    this.value += by;
  }

  dec(by = 1): void {
    this.value -= by;
  }

  set(value: number): void {
    this.value = value;
  }

  observe(value: number): void {
    const bounds = this.bounds!;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.buckets![i]! += 1;
    this.value += value;
    this.count += 1;
  }
}

interface Sample {
  readonly value: number;
  readonly labels: Record<string, string | number>;
  readonly metricName?: string;
}

export class SeriesMetric {
  /** How prom-client's cluster aggregator combines workers' values. */
  readonly aggregator = 'sum';
  private readonly cells = new Map<string, SeriesCell>();

  constructor(
    public name: string,
    readonly help: string,
    readonly type: SeriesType,
    private readonly labelNames: readonly string[],
    private readonly bounds?: readonly number[],
  ) {}

  /** The cell of one label set (values in `labelNames` order), made on first use. Bind it once and keep it. */
  cell(...values: string[]): SeriesCell {
    const key = values.join('\u0000');
    let cell = this.cells.get(key);
    if (cell === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = values[i]!;
      });
      cell = new SeriesCell(labels, this.bounds);
      this.cells.set(key, cell);
    }
    return cell;
  }

  /** prom-client's metric contract: what the registry formats. */
  async get(): Promise<{
    name: string;
    help: string;
    type: SeriesType;
    values: Sample[];
    aggregator: string;
  }> {
    const values: Sample[] = [];
    for (const cell of this.cells.values()) {
      if (this.type !== 'histogram') {
        values.push({ value: cell.value, labels: { ...cell.labels } });
        continue;
      }
      let cumulative = 0;
      this.bounds!.forEach((le, i) => {
        cumulative += cell.buckets![i]!;
        values.push({ value: cumulative, labels: { ...cell.labels, le }, metricName: `${this.name}_bucket` });
      });
      values.push({
        value: cell.count,
        labels: { ...cell.labels, le: '+Inf' },
        metricName: `${this.name}_bucket`,
      });
      values.push({ value: cell.value, labels: { ...cell.labels }, metricName: `${this.name}_sum` });
      values.push({ value: cell.count, labels: { ...cell.labels }, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** `registry.resetMetrics()`: every series back to zero (cells stay bound). */
  reset(): void {
    for (const cell of this.cells.values()) {
      cell.value = 0;
      cell.count = 0;
      cell.buckets?.fill(0);
    }
  }
}
