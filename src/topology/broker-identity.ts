/** The broker as read at connect; structural, so that topology needs nothing from connection. */
export interface BrokerIdentity {
  readonly product: string;
  readonly version: string;
  readonly major?: number;
  readonly minor?: number;
  /** As connection's BrokerFeatures reads them from the version: only the ones topology decides on. */
  readonly features: { readonly quorumPriorities: boolean; readonly classicConsumerTimeout: boolean };
}
