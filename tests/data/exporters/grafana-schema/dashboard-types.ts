// Types a dashboard JSON is checked against: Grafana 11.6's own schema (@grafana/schema),
// with the Prometheus query model that the schema leaves open.
// tests/test_alerts_data.py writes the dashboard into a .ts file as object literals typed with
// these, and `tsc --noEmit` reports every unknown key, wrong type and bad enum value.

import type {
  AnnotationQuery,
  AnnotationTarget,
  Dashboard,
  DataQuery,
  FieldConfig,
} from '@grafana/schema';
import type {
  FieldConfig as StateTimelineFieldConfig,
  Options as StateTimelineOptions,
} from '@grafana/schema/dist/esm/raw/composable/statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen.js';
import type { Options as StatOptions } from '@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen.js';
import type {
  FieldConfig as TimeSeriesFieldConfig,
  Options as TimeSeriesOptions,
} from '@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen.js';

// JSON spells a string enum member by its value ("table", not LegendDisplayMode.Table): map
// every string enum to the union of its values, keep the structure (and its optionality).
export type Json<T> = T extends string
  ? `${T}`
  : T extends ReadonlyArray<infer U>
    ? Array<Json<U>>
    : T extends object
      ? { [K in keyof T]: Json<T[K]> }
      : T;

// The Prometheus query of Grafana 11.6 (public/app/plugins/datasource/prometheus, dataquery).
export interface PromQuery extends DataQuery {
  expr: string;
  editorMode?: 'code' | 'builder';
  exemplar?: boolean;
  format?: 'time_series' | 'table' | 'heatmap';
  instant?: boolean;
  interval?: string;
  intervalFactor?: number;
  legendFormat?: string;
  range?: boolean;
}

// A Prometheus annotation: the query in `target`, and the display keys the Prometheus data
// source reads beside it (processEvents: titleFormat, textFormat, tagKeys, useValueForTime).
export type PromAnnotation = Json<Omit<AnnotationQuery<PromQuery>, 'target'>> & {
  target: Json<PromQuery>;
  titleFormat?: string;
  textFormat?: string;
  tagKeys?: string;
  useValueForTime?: boolean;
};

// Grafana's built-in "Annotations & Alerts" entry.
export type BuiltInAnnotation = Json<Omit<AnnotationQuery, 'target'>> & {
  target: Json<AnnotationTarget>;
};

// The whole dashboard, its annotations as above.
export type DashboardJson = Json<Omit<Dashboard, 'annotations'>> & {
  annotations: { list: Array<PromAnnotation | BuiltInAnnotation> };
};

export type Targets = Array<Json<PromQuery>>;
export type Defaults = Json<FieldConfig>;

export type TimeSeries = {
  options: Json<TimeSeriesOptions>;
  custom: Json<TimeSeriesFieldConfig>;
};
export type Stat = { options: Json<StatOptions> };
export type StateTimeline = {
  options: Json<StateTimelineOptions>;
  custom: Json<StateTimelineFieldConfig>;
};
