import type { WarrenFeatureOptions } from './module-options';

/**
 * What one `WarrenModule.forFeature` call contributed. Registered as a value provider of the feature's
 * module, where the root module finds it through Nest's DiscoveryService: Nest has no multi-providers.
 */
export class WarrenFeature {
  constructor(readonly options: WarrenFeatureOptions) {}
}
